"""Prefill attention (causal flash attention, GQA/MQA): its shape, tiling and feasibility rules.

One prefill call of one layer: every sequence of the batch has ``seq_len``
query tokens per Q head attending over the same ``seq_len`` keys (causal:
query row i sees keys 0..i). As in CANN's PromptFlashAttention and catlass's
flash-attention-infer example, the work is cut into units of
(sequence, Q head, Q block of ``q_tile`` rows, CANN's ``sOuterSize``); a unit
streams K and V of its KV head through one AI core in blocks of ``kv_tile``
tokens (``sInnerSize``: one S = Q K^T, one online-softmax update and one
O += P V per block), moving ``l1_tile`` tokens GM->L1 per load. Q heads that
share a KV head read the same K/V, each unit on its own (K/V are re-read once
per Q block and per Q head: that re-read is what ``q_tile`` trades against
the buffers). Under a causal mask a unit skips the KV blocks above the
diagonal, so late Q blocks carry more work than early ones; ``dealing`` says
how units go to cores: ``cyclic`` (catlass: unit i to core i mod cores) or
``balanced`` (CANN: contiguous runs of units of equal causal weight).

The capacity rules mirror the decode space's: a tiling that overflows a
buffer would not build on the chip, so it is never costed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from aoe_optuna.space.buffers import overflows
from aoe_optuna.space.layer_problem import ProblemFields

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile

FRACTAL = 16  # cube rows per fractal: a Q block is padded to it
ACCUMULATOR_BYTES = 4  # scores and partial outputs are fp32 in L0C/UB
L0_K = 64  # reduction depth of one MMAD's operands in L0A/L0B
L0_N = 128  # columns of one MMAD's fp32 result chunk in L0C
# Scores the vector cores take per softmax chunk: CANN cuts the Q x KV block
# into row chunks of 16384 fp32 scores (prompt_flash_attention_tiling.cpp,
# CVDIFF_MM1RES_UB_SIZE), e.g. 16 rows x 1024 tokens.
SOFTMAX_CHUNK_SCORES = 16384
Q_TILES = (64, 128, 256)
KV_TILES = (256, 512, 1024, 2048)
L1_TILES = (128, 256, 512)
PIPELINES = (1, 2)
DEALINGS = ("cyclic", "balanced")


def _causal_keys(problem: Mapping[str, Any]) -> tuple[str, str] | None:
    """A knowledge base entry's rule: under a causal mask every query row has its key."""
    if problem["causal"] and problem["kv_len"] < problem["seq_len"]:
        return "kv_len", f"at least seq_len {problem['seq_len']} under a causal mask"
    return None


@dataclass(frozen=True)
class PrefillAttention:
    """One prefill attention call: ``batch`` sequences of ``seq_len`` query tokens.

    ``kv_len`` keys per sequence (None: ``seq_len``, a plain prefill; more:
    a chunk of a longer prompt whose earlier keys are cached). A causal mask
    is aligned bottom-right, as CANN's sparse mode 3: the last query row sees
    every key. ``window`` (sliding-window layers; CANN's band mode, sparse mode
    4 with preTokens) keeps the last ``window`` keys of each row, its own
    included; None keeps them all.
    """

    part: ClassVar[str] = "attention"
    kind: ClassVar[str] = "attention"
    KB_OP: ClassVar[str] = "prefill_attention"
    # V's width (MLA prefill) and the window (sliding layers) are keyed only where set
    KB_FIELDS: ClassVar[dict[str, ProblemFields]] = {KB_OP: ProblemFields(
        "attention", ("batch", "q_heads", "kv_heads", "head_dim", "seq_len", "kv_len",
                      "causal"),
        optional=("v_head_dim", "window"), flags=("causal",),
        rule=_causal_keys,
        tiling={"q_tile": Q_TILES, "kv_tile": KV_TILES, "l1_tile": L1_TILES,
                "pipeline": PIPELINES, "dealing": DEALINGS})}

    batch: int
    q_heads: int
    kv_heads: int
    head_dim: int
    seq_len: int
    causal: bool = True
    dtype_bytes: int = 2
    kv_len: int | None = None
    window: int | None = None
    v_head_dim: int | None = None  # V's and O's head width when not head_dim (MLA: 128 of 192)

    def __post_init__(self) -> None:
        if self.v_head_dim == self.head_dim:  # one spelling per problem
            object.__setattr__(self, "v_head_dim", None)
        if self.window is not None and (not self.causal or self.window < 1):
            raise ValueError(f"window: expected a positive window under a causal mask, "
                             f"got {self.window} (causal={self.causal})")
        if min(self.batch, self.q_heads, self.kv_heads, self.head_dim, self.seq_len,
               self.dtype_bytes, self.keys, self.v_dim) < 1:
            raise ValueError(f"prefill attention: every size must be at least 1, got {self}")
        if self.causal and self.keys < self.seq_len:
            raise ValueError(f"kv_len: {self.keys} is shorter than seq_len {self.seq_len} "
                             "under a causal mask")
        if self.q_heads % self.kv_heads:
            raise ValueError(f"q_heads: {self.q_heads} is not a multiple of kv_heads "
                             f"{self.kv_heads}")

    @property
    def keys(self) -> int:
        """Keys per sequence."""
        return self.seq_len if self.kv_len is None else self.kv_len

    @property
    def v_dim(self) -> int:
        """Head width of V and O (QK^T's is ``head_dim``)."""
        return self.head_dim if self.v_head_dim is None else self.v_head_dim

    @property
    def group(self) -> int:
        """Q heads per KV head (1: MHA, q_heads: MQA)."""
        return self.q_heads // self.kv_heads

    @property
    def hbm_bytes(self) -> int:
        """Q, K, V read once and O written once: the HBM traffic no tiling can avoid."""
        widths = self.head_dim + self.v_dim
        q_and_o = self.batch * self.q_heads * self.seq_len * widths
        k_and_v = self.batch * self.kv_heads * self.keys * widths
        return (q_and_o + k_and_v) * self.dtype_bytes

    @property
    def flops(self) -> float:
        """QK^T and PV, 2 FLOP per multiply-add, over the (query, key) pairs the mask keeps."""
        return 2.0 * self.batch * self.q_heads * (self.head_dim + self.v_dim) * self.pairs

    @property
    def pairs(self) -> float:
        """(query, key) pairs per sequence and head that the mask keeps."""
        s, past = self.seq_len, self.keys - self.seq_len
        if not self.causal:
            return float(s * self.keys)
        if self.window is None:
            return s * past + s * (s + 1) / 2
        # Row at position p (past .. past + s - 1) sees min(p + 1, window) keys.
        w, first, last = self.window, past + 1, past + s  # p + 1 over the rows
        ramp_end = min(last, w - 1)  # rows still seeing every earlier key
        ramp = (ramp_end - first + 1) * (first + ramp_end) / 2 if ramp_end >= first else 0.0
        return ramp + w * (s - max(0, ramp_end - first + 1))


@dataclass(frozen=True)
class PrefillTiling:
    """How one prefill attention call is cut up, dealt to cores and pipelined."""

    q_tile: int  # Q rows per unit (sOuterSize): K/V are re-read once per Q block
    kv_tile: int  # K/V tokens per softmax step (sInnerSize)
    l1_tile: int  # K (or V) tokens per GM->L1 load
    pipeline: int  # 1: stages one after another; 2: ping-pong buffers overlap them
    dealing: str  # "cyclic" (catlass) or "balanced" (CANN's equal causal weight)


def softmax_rows(t: PrefillTiling) -> int:
    """Rows of one softmax chunk on a vector core (CANN's softmaxSOuterFactor)."""
    return max(1, SOFTMAX_CHUNK_SCORES // t.kv_tile)


def q_blocks(shape: PrefillAttention, t: PrefillTiling) -> int:
    """Q blocks per (sequence, Q head)."""
    return math.ceil(shape.seq_len / t.q_tile)


def visible_tokens(shape: PrefillAttention, t: PrefillTiling, block: int) -> int:
    """Keys Q block ``block`` streams: all of them, up to its last row when causal, and
    from its first row's window on under a sliding window."""
    if not shape.causal:
        return shape.keys
    return min(shape.keys, shape.keys - shape.seq_len + (block + 1) * t.q_tile) \
        - first_key(shape, t, block)


def first_key(shape: PrefillAttention, t: PrefillTiling, block: int) -> int:
    """The first key Q block ``block`` needs: 0, or its first row's window start."""
    if shape.window is None:
        return 0
    return max(0, shape.keys - shape.seq_len + block * t.q_tile - shape.window + 1)


def band_cut(shape: PrefillAttention, t: PrefillTiling, block: int) -> bool:
    """Whether a sliding window drops keys that some row of Q block ``block`` would
    otherwise see: its first KV block is then masked too."""
    if shape.window is None:
        return False
    last_row = min(shape.seq_len, (block + 1) * t.q_tile) - 1
    return shape.keys - shape.seq_len + last_row - shape.window + 1 > 0


def violations(profile: SocProfile, shape: PrefillAttention, t: PrefillTiling) -> list[str]:
    """Why ``t`` cannot run ``shape`` on ``profile``: one line per broken rule, [] if none."""
    b, d, v = shape.dtype_bytes, shape.head_dim, shape.v_dim
    out: list[str] = []
    if t.pipeline not in PIPELINES:
        out.append(f"pipeline: expected one of {PIPELINES}, got {t.pipeline}")
    if t.dealing not in DEALINGS:
        out.append(f"dealing: expected one of {DEALINGS}, got {t.dealing!r}")
    if t.q_tile % FRACTAL or t.q_tile < FRACTAL:
        out.append(f"q_tile: {t.q_tile} is not a positive multiple of {FRACTAL}")
    if t.l1_tile > t.kv_tile or t.kv_tile % t.l1_tile:
        out.append("tiles: expected l1_tile to divide kv_tile")
    if t.l1_tile % FRACTAL:
        out.append(f"l1_tile: {t.l1_tile} is not a multiple of {FRACTAL}")
    stages = t.pipeline
    half = math.ceil(t.q_tile / 2)  # rows each of the two vector cores owns
    chunk = softmax_rows(t) * t.kv_tile
    needs = {
        # The Q block stays resident; K or V loads ping-pong.
        "L1": t.q_tile * d * b + stages * t.l1_tile * max(d, v) * b,
        # A operand: a Q or P slice of L0_K columns for every row of the block.
        "L0A": stages * t.q_tile * L0_K * b,
        # B operand: a K or V slice, L0_K deep and up to a head or L0_N wide.
        "L0B": stages * L0_K * max(d, v, L0_N) * b,
        # fp32 result of one MMAD chunk (scores or PV) for every row of the block.
        "L0C": stages * t.q_tile * L0_N * ACCUMULATOR_BYTES,
        # Per vector core: one softmax chunk (fp32 scores in, P out; the steps
        # ping-pong through GM workspace, not UB) plus the running output, max
        # and sum of its half of the rows.
        "UB": (chunk * (ACCUMULATOR_BYTES + b)
               + half * v * ACCUMULATOR_BYTES + 2 * half * ACCUMULATOR_BYTES),
    }
    return out + overflows(profile, needs)


def feasible_tilings(profile: SocProfile, shape: PrefillAttention) -> list[PrefillTiling]:
    """Every tiling the rules allow (a few dozen points).

    A KV block longer than the sequence runs the same kernel as the smallest
    one that holds it, so only that one is listed.
    """
    holds_all = min([k for k in KV_TILES if k >= shape.keys], default=KV_TILES[-1])
    out = []
    for q in Q_TILES:
        for kv in (k for k in KV_TILES if k <= holds_all):
            for l1 in L1_TILES:
                for stages in PIPELINES:
                    for dealing in DEALINGS:
                        t = PrefillTiling(q, kv, l1, stages, dealing)
                        if not violations(profile, shape, t):
                            out.append(t)
    return out


def cann_default_tiling(profile: SocProfile, shape: PrefillAttention) -> PrefillTiling:
    """The tiling CANN's PromptFlashAttention host code picks for fp16/bf16 Q/K/V.

    Read from hicann/ops-transformer ``attention/prompt_flash_attention/op_host/
    prompt_flash_attention_tiling.cpp``:

    * ``AdjustCVTilingCVDiff``: Q block (sOuter) 128 rows; KV block (sInner)
      1024 tokens, 512 when the KV sequence is at most 1024 tokens
      (``CVDIFF_SINNER_FACTOR_DEFAULT``, ``CVDIFF_SINNER_FACTOR_SMALL_KVS``),
      for fp16 at normal precision (bf16 and high precision take 512 tokens
      for head_dim 32..199, not modelled here); softmax chunks of 16384 fp32
      scores (``CVDIFF_MM1RES_UB_SIZE``);
    * ``PromptFlashAttentionSplitNSNew``: units of (Q head, sequence, Q block)
      split into contiguous runs of equal weight, a causal Q block weighing
      its block index + 1 (``balanced`` here).

    CANN's cube side moves K/V in the matmul API's base blocks; this model
    gives it 256-token L1 loads and double buffering, which fit the buffers
    for head_dim 128.
    """
    kv = 512 if shape.keys <= 1024 else 1024
    t = PrefillTiling(q_tile=128, kv_tile=kv, l1_tile=256, pipeline=2, dealing="balanced")
    if violations(profile, shape, t):  # a wide head: the single-buffered variant
        t = PrefillTiling(q_tile=128, kv_tile=kv, l1_tile=128, pipeline=1, dealing="balanced")
    return t
