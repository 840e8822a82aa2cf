"""MLA decode attention (DeepSeek's multi-head latent attention, absorbed): its shape,
tiling and feasibility rules.

Serving engines keep MLA's KV cache compressed and absorb the up-projections
into Q and O, so one decode step of one layer is MQA over a latent cache:
every Q head (``q_heads`` on a card) attends the same ``kv_lora_rank +
qk_rope_head_dim`` values per cached token (576 for DeepSeek-V2/V3), QK^T over
all of them and PV over the first ``kv_lora_rank`` (512). K and V are one
tensor, so a KV block is read once for both products, and the Q heads are the
M dimension of both MMADs: a unit (sequence, block of ``head_tile`` Q heads,
KV split) reads its part of the cache once for all its heads, and a second
head block of the same sequence reads it again.

The tiling follows catlass's MLA example (hicann/catlass ``examples/19_mla``:
``mla_tiling.cpp``, ``mla_tiling.h``, ``mla.md``): Q heads per block from its
``QN_TILE_LIST`` (128, 64, 32, 16, 8, 1), the paged cache walked in steps of
one 128-token page (general kernel, the page kept in L1 between QK^T and PV)
or four pages (the 128-head kernel, the latent re-read for PV), one step
issued ahead of the vector cores, and the KV split across cores with a
combine pass (flash-decoding). A tiling that overflows a buffer would not
build on the chip, so it is never costed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from aoe_optuna.space.buffers import overflows
from aoe_optuna.space.layer_problem import ProblemFields
from aoe_optuna.space.paged_kv import max_kv_split, tokens_per_unit
from aoe_optuna.space.prefill_attention import ACCUMULATOR_BYTES, FRACTAL, L0_K, L0_N

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile

HEAD_TILES = (8, 16, 32, 64, 128)  # catlass QN_TILE_LIST (1 is for single-head tests)
BLOCK_PAGES = (1, 2, 4, 8)  # pages per softmax step: catlass runs 1 (general) and 4 (128 heads)
PIPELINES = (1, 2)
RESIDENT = (0, 1)  # 1: the step's latent stays in L1 for PV; 0: V is re-read through L2
# catlass mla_tiling.h: SPLITKV_RATION, KV_SEQLEN_SLICE.
SPLIT_BATCH_RATIO = 0.8
SPLIT_SLICE_TOKENS = 128
CATLASS_SPEC_HEADS = 128  # mla_tiling.cpp: specStrategyFlag (the 128-head, TP1 kernel)


@dataclass(frozen=True)
class MlaDecodeAttention:
    """One absorbed MLA decode call: ``batch`` sequences of ``context`` cached tokens."""

    part: ClassVar[str] = "attention"
    kind: ClassVar[str] = "attention"
    KB_OP: ClassVar[str] = "mla_decode_attention"
    KB_FIELDS: ClassVar[dict[str, ProblemFields]] = {KB_OP: ProblemFields(
        "attention", ("batch", "q_heads", "kv_lora_rank", "qk_rope_head_dim", "context",
                      "page_tokens"),
        tiling={"head_tile": None, "kv_split": None, "block_pages": BLOCK_PAGES,
                "resident": RESIDENT, "pipeline": PIPELINES})}

    batch: int
    q_heads: int
    context: int
    kv_lora_rank: int = 512
    qk_rope_head_dim: int = 64
    dtype_bytes: int = 2
    page_tokens: int = 128

    def __post_init__(self) -> None:
        if min(self.batch, self.q_heads, self.context, self.kv_lora_rank,
               self.qk_rope_head_dim, self.dtype_bytes, self.page_tokens) < 1:
            raise ValueError(f"MLA decode attention: every size must be at least 1, got {self}")

    @property
    def qk_dim(self) -> int:
        """Depth of QK^T: the latent and the rope key (576 for DeepSeek-V2/V3)."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def v_dim(self) -> int:
        """Width of PV: the latent (512)."""
        return self.kv_lora_rank

    @property
    def kv_bytes(self) -> int:
        """The latent cache of the whole batch, read once: what no tiling can avoid."""
        return self.batch * self.context * self.qk_dim * self.dtype_bytes

    @property
    def flops(self) -> float:
        """QK^T and PV of every Q head, 2 FLOP per multiply-add."""
        return 2.0 * self.batch * self.q_heads * self.context * (self.qk_dim + self.v_dim)


@dataclass(frozen=True)
class MlaTiling:
    """How one MLA decode call is cut up and pipelined on the AI cores."""

    head_tile: int  # Q heads per unit (the M of both MMADs): the cache is read once per block
    kv_split: int  # KV sequence parts per (sequence, head block); > 1 adds a combine pass
    block_pages: int  # pages per softmax step (one max/sum update and rescale of O)
    resident: int  # 1: the step's latent stays in L1 for PV; 0: V re-read through L2
    pipeline: int  # 1: stages one after another; 2: one step issued ahead (ping-pong)


def head_tiles(shape: MlaDecodeAttention) -> tuple[int, ...]:
    """Q heads per block: catlass's list below the heads, and every head in one block
    (catlass caps its tile at the group: ``min(128, q_heads)``)."""
    top = min(HEAD_TILES[-1], shape.q_heads)
    return tuple(sorted({h for h in HEAD_TILES if h < top} | {top}))


def head_blocks(shape: MlaDecodeAttention, t: MlaTiling) -> int:
    return math.ceil(shape.q_heads / t.head_tile)


def head_rows(t: MlaTiling) -> int:
    """A head block padded to whole cube fractals (the M of both MMADs)."""
    return math.ceil(t.head_tile / FRACTAL) * FRACTAL


def violations(profile: SocProfile, shape: MlaDecodeAttention, t: MlaTiling) -> list[str]:
    """Why ``t`` cannot run ``shape`` on ``profile``: one line per broken rule, [] if none."""
    b, qk, page = shape.dtype_bytes, shape.qk_dim, shape.page_tokens
    out: list[str] = []
    if t.pipeline not in PIPELINES:
        out.append(f"pipeline: expected one of {PIPELINES}, got {t.pipeline}")
    if t.resident not in RESIDENT:
        out.append(f"resident: expected one of {RESIDENT}, got {t.resident}")
    if t.block_pages not in BLOCK_PAGES:
        out.append(f"block_pages: expected one of {BLOCK_PAGES}, got {t.block_pages}")
    if t.head_tile not in head_tiles(shape):
        out.append(f"head_tile: expected one of {list(head_tiles(shape))} for "
                   f"{shape.q_heads} Q heads, got {t.head_tile}")
    if not 1 <= t.kv_split <= math.ceil(shape.context / page):
        out.append(f"kv_split: {t.kv_split} is not between 1 and the context's pages")
    if out:
        return out
    rows, stages = head_rows(t), t.pipeline
    held = t.block_pages * page if t.resident else page  # latent tokens in L1 per stage
    half = math.ceil(rows / 2)  # rows each of the two vector cores takes
    needs = {
        # Q (latent and rope parts) stays; latent loads ping-pong; P comes back from
        # the vector cores one page of keys at a time.
        "L1": rows * qk * b + stages * held * qk * b + stages * rows * page * b,
        # A operand: a Q or P slice L0_K deep for every row.
        "L0A": stages * rows * L0_K * b,
        # B operand: a K or V slice, L0_K deep and L0_N wide.
        "L0B": stages * L0_K * L0_N * b,
        # fp32 result of one MMAD chunk (scores or a PV column block) for every row.
        "L0C": stages * rows * L0_N * ACCUMULATOR_BYTES,
        # Per vector core: a page of its rows' fp32 scores and P, the running O
        # rescaled L0_N columns at a time, and the running max and sum.
        "UB": (stages * half * page * (ACCUMULATOR_BYTES + b)
               + half * L0_N * ACCUMULATOR_BYTES + 2 * half * ACCUMULATOR_BYTES),
    }
    return out + overflows(profile, needs)


def block_pages_options(shape: MlaDecodeAttention, kv_split: int) -> tuple[int, ...]:
    """Step sizes up to the smallest that holds a unit's tokens (larger ones run the
    same kernel)."""
    pages = tokens_per_unit(shape, kv_split) // shape.page_tokens
    holds_all = min([p for p in BLOCK_PAGES if p >= pages], default=BLOCK_PAGES[-1])
    return tuple(p for p in BLOCK_PAGES if p <= holds_all)


def feasible_tilings(profile: SocProfile, shape: MlaDecodeAttention) -> list[MlaTiling]:
    """Every tiling the rules allow (at most a few thousand): the search space's points.

    A step longer than a unit's tokens runs the same kernel as the step that
    holds them; it is listed all the same, as the space (which cannot see the
    split it depends on) offers it."""
    out = []
    for heads in head_tiles(shape):
        for split in range(1, max_kv_split(profile, shape) + 1):
            for pages in BLOCK_PAGES:
                for resident in RESIDENT:
                    for stages in PIPELINES:
                        t = MlaTiling(heads, split, pages, resident, stages)
                        if not violations(profile, shape, t):
                            out.append(t)
    return out


def catlass_default_tiling(profile: SocProfile, shape: MlaDecodeAttention) -> MlaTiling:
    """The tiling catlass's MLA example picks (hicann/catlass ``examples/19_mla``).

    * ``GetQNBlockTile``: one query token per sequence gives ``QN_TILE_LIST[0]``
      = 128 heads per block, capped at the heads (``min(128, q_heads)``);
    * 128 heads (``specStrategyFlag``, the TP1 kernel ``mla_kernel_tp1_spec.cpp``):
      steps of four pages, the latent not kept in L1 (``mla.md``); a KV split
      only for the sequences past the last whole round of ``blockDim`` (the cube
      cores), when they are fewer than 0.8 x ``blockDim`` (``GetKVSplitParamSpec``):
      here, when the batch itself is;
    * otherwise (``mla_kernel.cpp``): steps of one page, the page kept in L1; a KV
      split when the longest context is at least ``blockDim`` x 128 x 2 tokens
      and the batch at most 0.8 x ``blockDim`` (``GetKVSplitParam``);
    * the split: ``lcm(batch, blockDim) / batch`` parts, rounded to whole pages
      and recounted;
    * both kernels issue one step's QK^T and softmax ahead (``pipeline`` 2).
    """
    cores = profile.cube_cores  # blockDim: catlass launches one block per cube core
    heads = min(HEAD_TILES[-1], shape.q_heads)
    spec = shape.q_heads == CATLASS_SPEC_HEADS
    if spec:
        split_wanted = shape.batch < SPLIT_BATCH_RATIO * cores
    else:
        split_wanted = (shape.context >= cores * SPLIT_SLICE_TOKENS * 2
                        and shape.batch <= SPLIT_BATCH_RATIO * cores)
    split = 1
    if split_wanted:
        parts = math.lcm(shape.batch, cores) // shape.batch
        pages = math.ceil(shape.context / shape.page_tokens)
        per_part = math.ceil(pages / parts) * shape.page_tokens
        split = min(math.ceil(shape.context / per_part), max_kv_split(profile, shape))
    pages = 4 if spec else 1
    pages = max(p for p in block_pages_options(shape, split) if p <= pages)
    t = MlaTiling(heads, split, pages, 0 if spec else 1, 2)
    if violations(profile, shape, t):  # a wide latent: the single-buffered variant
        t = MlaTiling(heads, split, pages, 0, 1)
    return t
