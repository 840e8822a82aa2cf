"""Decode attention (GQA/MQA over a paged KV cache): its shape, tiling and feasibility rules.

One decode step of one layer: every sequence of the batch has one query
token per Q head and attends over ``context`` cached tokens. Q heads that
share a KV head (``group`` of them) are computed together, so the KV cache is
read once per KV head. The work is split into units of
(sequence, KV head, KV split); a unit streams its share of K and V through
one AI core in steps of ``block_tile`` tokens (the softmax block, CANN's
``sInnerSize``: one max/sum update and one rescale of the output per step),
moving ``l1_tile`` tokens GM->L1 per load (the chunk the vector cores take
into UB) and ``l0_tile`` tokens per MMAD. With ``kv_split > 1`` each unit
writes a partial output and its log-sum-exp, and a combine pass on the
vector cores merges them (flash-decoding).

Speculative and multi-token-prediction decode give a sequence ``q_tokens``
query tokens (2 to 16). CANN's IncreFlashAttention folds them with the group
(``gqaMtpFlag_`` for Q_S in 2..16, incre_flash_attention_tiling.cpp): the M of
both MMADs is ``group x q_tokens`` rows (``cubeMSize``), up to 256 rows per
unit (``gMax_``; more rows split into further units, ``s1SplitSize_``), so the
KV cache is still streamed once per KV head, not once per query token.

The capacity rules mirror the GEMM space's (hardware/capacity.py): a tiling
that overflows a buffer would not build on the chip, so it is never costed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from aoe_optuna.space.buffers import overflows
from aoe_optuna.space.layer_problem import ProblemFields
from aoe_optuna.space.paged_kv import tokens_per_unit

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile

FRACTAL = 16  # cube rows per fractal: the Q group is padded to it
MAX_UNIT_ROWS = 256  # IncreFlashAttention's gMax_ for fp16/bf16 KV: query rows per unit
MAX_Q_TOKENS = 16  # the most query tokens per sequence CANN folds (gqaMtpFlag_)
ACCUMULATOR_BYTES = 4  # scores and partial outputs are fp32 in L0C/UB
KV_LAYOUTS = ("BNSD", "BSND")
BLOCK_TILES = (128, 256, 512, 1024, 2048, 4096, 8192)  # CANN caps sInnerSize at 8192
L1_TILES = (128, 256, 512, 1024, 2048)
L0_TILES = (16, 32, 64, 128, 256)
PIPELINES = (1, 2)


@dataclass(frozen=True)
class DecodeAttention:
    """One decode attention call: ``batch`` sequences of ``context`` cached tokens.

    ``kv_layout`` is the paged cache's layout inside a page: BNSD keeps a
    head's ``page_tokens`` rows contiguous (one long run per page), BSND
    interleaves the heads token by token (a run of ``head_dim`` elements).
    """

    part: ClassVar[str] = "attention"
    kind: ClassVar[str] = "attention"
    KB_OP: ClassVar[str] = "decode_attention"
    KB_FIELDS: ClassVar[dict[str, ProblemFields]] = {KB_OP: ProblemFields(
        "attention", ("batch", "q_heads", "kv_heads", "head_dim", "context", "page_tokens",
                      "kv_layout"), optional=("q_tokens",), names={"kv_layout": KV_LAYOUTS},
        tiling={"kv_split": None, "block_tile": BLOCK_TILES, "l1_tile": L1_TILES,
                "l0_tile": L0_TILES, "pipeline": PIPELINES})}

    batch: int
    q_heads: int
    kv_heads: int
    head_dim: int
    context: int
    dtype_bytes: int = 2
    page_tokens: int = 128
    kv_layout: str = "BNSD"
    q_tokens: int | None = None  # query tokens per sequence (None: one, plain decode)

    def __post_init__(self) -> None:
        if self.q_tokens == 1:  # one spelling per problem
            object.__setattr__(self, "q_tokens", None)
        if self.q_tokens is not None and not 2 <= self.q_tokens <= MAX_Q_TOKENS:
            raise ValueError(f"q_tokens: expected 1 to {MAX_Q_TOKENS} query tokens per "
                             f"sequence, got {self.q_tokens}")
        if min(self.batch, self.q_heads, self.kv_heads, self.head_dim, self.context,
               self.dtype_bytes, self.page_tokens) < 1:
            raise ValueError(f"decode attention: every size must be at least 1, got {self}")
        if self.q_heads % self.kv_heads:
            raise ValueError(f"q_heads: {self.q_heads} is not a multiple of kv_heads "
                             f"{self.kv_heads}")
        if self.kv_layout not in KV_LAYOUTS:
            raise ValueError(f"kv_layout: expected one of {KV_LAYOUTS}, got {self.kv_layout!r}")

    @property
    def group(self) -> int:
        """Q heads per KV head (1: MHA, q_heads: MQA)."""
        return self.q_heads // self.kv_heads

    @property
    def tokens(self) -> int:
        """Query tokens per sequence."""
        return 1 if self.q_tokens is None else self.q_tokens

    @property
    def row_blocks(self) -> int:
        """Units a (sequence, KV head) is cut into by its query rows (group x tokens)."""
        return math.ceil(self.group * self.tokens / MAX_UNIT_ROWS)

    @property
    def group_rows(self) -> int:
        """One unit's query rows (the group's heads times the query tokens, folded),
        padded to whole cube fractals: the M of both MMADs."""
        rows = math.ceil(self.group * self.tokens / self.row_blocks)
        return math.ceil(rows / FRACTAL) * FRACTAL

    @property
    def kv_bytes(self) -> int:
        """K and V of the whole batch: the HBM traffic no tiling can avoid."""
        return 2 * self.batch * self.kv_heads * self.context * self.head_dim * self.dtype_bytes

    @property
    def flops(self) -> float:
        """QK^T and PV, 2 FLOP per multiply-add, real (unpadded) heads."""
        return 4.0 * self.batch * self.q_heads * self.tokens * self.head_dim * self.context


@dataclass(frozen=True)
class AttentionTiling:
    """How one decode attention call is cut up and pipelined on the AI cores."""

    kv_split: int  # KV sequence parts per (sequence, KV head); > 1 adds a combine pass
    block_tile: int  # tokens per softmax step (one max/sum update and rescale per step)
    l1_tile: int  # tokens of K (or V) per GM->L1 load, the vector cores' UB chunk
    l0_tile: int  # tokens per MMAD (N of QK^T, K of PV)
    pipeline: int  # 1: stages run one after another; 2: ping-pong buffers overlap them


def violations(profile: SocProfile, shape: DecodeAttention, t: AttentionTiling) -> list[str]:
    """Why ``t`` cannot run ``shape`` on ``profile``: one line per broken rule, [] if none."""
    b, d, g = shape.dtype_bytes, shape.head_dim, shape.group_rows
    out: list[str] = []
    if t.pipeline not in PIPELINES:
        out.append(f"pipeline: expected one of {PIPELINES}, got {t.pipeline}")
    if not 1 <= t.kv_split <= math.ceil(shape.context / shape.page_tokens):
        out.append(f"kv_split: {t.kv_split} is not between 1 and the context's pages")
    if t.l0_tile > t.l1_tile or t.l1_tile > t.block_tile:
        out.append("tiles: expected l0_tile <= l1_tile <= block_tile")
    if t.block_tile % t.l1_tile or t.l1_tile % t.l0_tile:
        out.append("tiles: expected each tile to divide the next larger one")
    if t.l0_tile % FRACTAL:
        out.append(f"l0_tile: {t.l0_tile} is not a multiple of {FRACTAL}")
    if max(t.block_tile, shape.page_tokens) % min(t.block_tile, shape.page_tokens):
        out.append(f"block_tile: {t.block_tile} and the page ({shape.page_tokens} tokens) "
                   "must divide one another")
    stages = t.pipeline
    half = math.ceil(g / 2)  # rows each of the two vector cores takes
    needs = {
        # Q once, plus ping-pong K/V loads.
        "L1": g * d * b + stages * t.l1_tile * d * b,
        # A operand: Q (QK^T) or P (PV), whichever is larger.
        "L0A": stages * g * max(d, t.l0_tile) * b,
        # B operand: a K or V slice of l0_tile tokens.
        "L0B": stages * t.l0_tile * d * b,
        # fp32 scores of one L1 tile and the fp32 output of PV.
        "L0C": stages * g * t.l1_tile * ACCUMULATOR_BYTES + g * d * ACCUMULATOR_BYTES,
        # The vector cores take the scores one L1 tile at a time: each holds half the
        # group's fp32 scores and P (fp16/bf16), plus the running output, max and sum.
        "UB": (stages * half * t.l1_tile * (ACCUMULATOR_BYTES + b)
               + half * d * ACCUMULATOR_BYTES + 2 * half * ACCUMULATOR_BYTES),
    }
    return out + overflows(profile, needs)


def feasible_tilings(profile: SocProfile, shape: DecodeAttention) -> list[AttentionTiling]:
    """Every tiling the rules allow: the space is small enough to enumerate.

    A softmax block larger than a unit's tokens runs the same kernel as the
    smallest block that holds them, so only that one is listed.
    """
    max_split = min(2 * profile.cube_cores, math.ceil(shape.context / shape.page_tokens))
    out = []
    for split in range(1, max_split + 1):
        holds_all = min([o for o in BLOCK_TILES if o >= tokens_per_unit(shape, split)],
                        default=BLOCK_TILES[-1])
        for block in (o for o in BLOCK_TILES if o <= holds_all):
            for l1 in L1_TILES:
                for l0 in L0_TILES:
                    for stages in PIPELINES:
                        t = AttentionTiling(split, block, l1, l0, stages)
                        if not violations(profile, shape, t):
                            out.append(t)
    return out


def cann_default_tiling(profile: SocProfile, shape: DecodeAttention) -> AttentionTiling:
    """The tiling CANN's IncreFlashAttention host code picks for a paged fp16/bf16 cache.

    Read from hicann/ops-transformer ``attention/incre_flash_attention/op_host``
    (``IsFlashDecode``, ``CheckCoreOkFlag``, ``SplitBNS``, ``CalcInnerSize``):

    * flash-decoding (KV split) only when the cache is longer than 1024 tokens
      and batch x KV heads < 0.4 x the cores it splits over (the vector
      cores) and, for GQA, the context is at least 2048;
    * split = cores / (batch x KV heads), lowered until each part holds at least
      512 tokens;
    * the softmax block (``sInnerSize``) is 8192, 4096 or 2048 tokens for a
      group of < 5, 5..9, >= 10 Q heads per KV head, cut to the tokens a unit
      has and to a multiple of the page.

    CANN's cube side moves K/V in the matmul API's own base blocks; this model
    gives it 512-token L1 loads, 128-token MMADs and double buffering, the
    largest that fit the buffers for head_dim 128; a wider head (Gemma's 256)
    takes the largest smaller loads and MMADs that fit, single-buffered only
    where nothing double-buffered does.
    """
    bn = shape.batch * shape.kv_heads
    cores = profile.vector_cores
    split = 1
    flash_decode = (shape.context > 1024 and bn < 0.4 * cores
                    and (shape.group == 1 or shape.context >= 2048))
    if flash_decode:
        split = max(1, cores // bn)
        while split > 1 and shape.context // split < 512:
            split -= 1
    block = (8192, 4096, 2048)[min(shape.group // 5, 2)]
    block = min(block, tokens_per_unit(shape, split))
    block = max(shape.page_tokens, block // shape.page_tokens * shape.page_tokens)
    block = _largest_at_most(BLOCK_TILES, block)
    l1 = min(512, block)
    first = AttentionTiling(split, block, l1, min(128, l1), 2)
    for stages in (2, 1):
        for l1_tile in (x for x in reversed(L1_TILES) if x <= l1):
            for l0_tile in (x for x in reversed(L0_TILES) if x <= min(128, l1_tile)):
                t = AttentionTiling(split, block, l1_tile, l0_tile, stages)
                if not violations(profile, shape, t):
                    return t
    return first  # nothing fits: the cost model names the buffer


def _largest_at_most(options: tuple[int, ...], limit: int) -> int:
    return max([o for o in options if o <= limit], default=options[0])
