"""CANN's fused infer attention (FIA) on a 910B prefill: how its host deals blocks of
rows by keys to the AI cores, splitting a sequence's keys over cores when there are
few blocks, and what that costs.

Read in CANN's ops-transformer as its later snapshots have it (the mirror
ckorikov/cann-ops-transformer@0163bbb): ``fused_infer_attention_score_tiling_v3.cpp``
``RouteToFia`` sends fp16/bf16 attention whose Q, K and V share a head size (no
rope split; BSH, BSND, BNSD) to the FIA kernel on a 1:2 cube/vector chip, where
earlier snapshots (hicann/ops-transformer@c29bc10) sent a prompt of more than 16
tokens to PromptFlashAttention (:mod:`..attention.prefill_attention`), whose units
never split keys. ``attention/common/op_host/arch32/fia_tiling_nonquant.cpp``:

* ``CalcInnerSize`` / ``CalcMBaseSize`` for a prompt (S1 > 16): a basic block is
  ``mBaseSize`` rows of the merged G x S1 axis (512, or 256 in bf16 or fp16 at high
  precision) by ``sInnerSize`` keys (1024, or 512 likewise; the problem carries its
  dtype's bytes only, so fp16 at normal precision is modelled); ``InitParams``: the
  cube's view (``CUBE_VIEW_MM``), one AI core a block, its two vector cores each
  taking half the block's rows for the softmax;
* ``split_core_v1.h`` ``SplitCore`` (the ``#if 1`` branch): every (batch, KV head)
  has ``ceil(G S1 / mBase) x ceil(S2 / sInner)`` blocks; each core takes
  ``ceil(blocks / cores)`` consecutive blocks (1 when there are no more blocks than
  cores) in (batch-head, row block, key block) order, so a core's share may end in
  the middle of a row block's keys: that row block's keys are then split over the
  cores that hold them (``s2SplitNumOfFdHead``), and ``SplitFD`` combines their
  partial outputs on the vector cores after the main pass (flash decoding).

A block is priced with the prompt kernel's step costs (:mod:`..attention.flash_step`:
the cube's two matmuls, the online softmax at msKPP's instruction rates, K/V from L2
or HBM), a core's blocks as one pipeline that fills once (:func:`_pipelined`); the
chip-wide floor of the hand-over traffic and the roofline are the prompt model's.
Under a causal mask a block's keys stop at its last row's (and start at its first
row's window under a sliding window) and a block wholly outside them is skipped,
but ``SplitCore`` deals the blocks as if none were masked (its ``BaseInfo`` carries
the mask's tokens; the dealing reads none of them): the cores holding the last row
blocks run full rows of keys, so one head's causal call takes about as long as a
full one although half its blocks are skipped. No constant is set from an
attention timing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aoe_optuna.aicore.attention.prefill_attention import (
    FlashStages,
    StepCosts,
    l2_resident,
    roofline_s,
)
from aoe_optuna.aicore.attention.steps import (
    HBM_LATENCY_S,
    STEP_FLAG_S,
    VECTOR_CORES_PER_AI_CORE,
    combine_s,
    handover_bytes,
)
from aoe_optuna.aicore.pipes.launch import MIX_HEAD_S
from aoe_optuna.aicore.pipes.shared_memory import contended, l2_seconds
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.prefill_attention import PrefillAttention, PrefillTiling

M_BASE = 512  # CalcMBaseSize, S1 > 16, fp16 at normal precision
S_INNER = 1024  # CalcInnerSize, the same case
L1_TILE = 256  # K (or V) tokens per GM->L1 load, as the prompt model's default


@dataclass(frozen=True)
class Segment:
    """One core's keys of one row block: blocks ``first`` to ``last`` (inclusive)."""

    head: int  # batch x KV head, in the dealing's order
    row_block: int
    first: int
    last: int


@dataclass(frozen=True)
class FiaDealing:
    """Which blocks each used core runs, and how many cores hold a row block's keys."""

    cores: tuple[tuple[Segment, ...], ...]
    split: dict[tuple[int, int], int]  # (head, row block) -> cores sharing its keys

    @property
    def max_split(self) -> int:
        return max(self.split.values(), default=1)


def blocks(shape: PrefillAttention) -> tuple[int, int, int]:
    """Row blocks and key blocks per (batch, KV head), and the (batch, KV head)s."""
    rows = shape.group * shape.seq_len
    return math.ceil(rows / M_BASE), math.ceil(shape.keys / S_INNER), \
        shape.batch * shape.kv_heads


def deal(shape: PrefillAttention, cores: int) -> FiaDealing:
    """``SplitCore`` (split_core_v1.h) for equal sequences: ``ceil(blocks / cores)``
    consecutive blocks a core, in (head, row block, key block) order."""
    row_blocks, key_blocks, heads = blocks(shape)
    total = heads * row_blocks * key_blocks
    per_core = 1 if total <= cores else math.ceil(total / cores)
    owned: list[list[Segment]] = []
    split: dict[tuple[int, int], int] = {}
    index = 0
    for head in range(heads):
        for row in range(row_blocks):
            owners = [min(cores - 1, (index + k) // per_core) for k in range(key_blocks)]
            index += key_blocks
            for core in dict.fromkeys(owners):
                mine = [k for k, c in enumerate(owners) if c == core]
                while len(owned) <= core:
                    owned.append([])
                owned[core].append(Segment(head, row, mine[0], mine[-1]))
            if len(set(owners)) > 1:
                split[(head, row)] = len(set(owners))
    return FiaDealing(tuple(tuple(c) for c in owned), split)


def _key_range(shape: PrefillAttention, row_block: int) -> tuple[int, int]:
    """The keys ``[first, end)`` a row block sees: all, or under a causal mask (bottom-
    right aligned) up to its last row's, from its first row's window start under a
    sliding window; the G x S1 rows S1-major within each of the group's heads (a
    block spanning two heads sees every key its rows do)."""
    if not shape.causal:
        return 0, shape.keys
    first = row_block * M_BASE
    last = min(shape.group * shape.seq_len, first + M_BASE) - 1
    if first // shape.seq_len != last // shape.seq_len:
        lo_row, hi_row = 0, shape.seq_len - 1
    else:
        lo_row, hi_row = first % shape.seq_len, last % shape.seq_len
    past = shape.keys - shape.seq_len
    start = 0 if shape.window is None else max(0, past + lo_row - shape.window + 1)
    return start, min(shape.keys, past + hi_row + 1)


def _pipelined(parts: list[tuple[FlashStages, int]]) -> float:
    """A core's blocks, one after another in one pipeline (the kernel loads the next
    block's K and runs its S = Q K^T while the vector cores work on this one's): each
    step costs its slowest stage, and the pipeline fills once (the first K load and
    S before the first softmax, the last P V after the last)."""
    body = sum((max(st.stream, st.cube, st.vector) + STEP_FLAG_S) * n for st, n in parts)
    first, last = parts[0][0], parts[-1][0]
    return body + HBM_LATENCY_S + first.stream / 2 + first.bmm1 + last.bmm2


@dataclass(frozen=True)
class FiaPrefillCost:
    """Seconds of one call and where they go."""

    total_s: float
    busiest_core_s: float
    mean_core_s: float  # over the cores used: the busiest over this is the imbalance
    combine_s: float  # flash decoding's combine after the main pass
    busy_cores: int
    max_split: int
    roofline_s: float


def fia_prefill_cost(profile: SocProfile, shape: PrefillAttention, *,
                     looped: bool = False) -> FiaPrefillCost:
    """CANN's FIA on ``shape``; ``looped``: timed back to back, so a working set that
    fits L2 is read from it."""
    dealing = deal(shape, profile.cube_cores)
    row_blocks = blocks(shape)[0]
    t = PrefillTiling(q_tile=M_BASE, kv_tile=S_INNER, l1_tile=L1_TILE, pipeline=2,
                      dealing="cyclic")
    warm = looped and l2_resident(profile, shape)
    # each key is fetched from HBM once; the other row blocks of its head re-read it
    miss = 0.0 if warm else 1.0 / row_blocks
    steps = StepCosts(profile, shape, t, miss, VECTOR_CORES_PER_AI_CORE)
    d, v, b = shape.head_dim, shape.v_dim, shape.dtype_bytes
    total_rows = shape.group * shape.seq_len
    io_miss = 0.0 if warm else 1.0
    loads = np.zeros(len(dealing.cores))
    handed = 0.0  # bytes the cube and vector cores hand each other through L2
    streamed = 0.0  # K, V and Q bytes the blocks read, O bytes they write
    for core, segments in enumerate(dealing.cores):
        parts: list[tuple[FlashStages, int]] = []
        for s in segments:
            rows = min(M_BASE, total_rows - s.row_block * M_BASE)
            lo, hi = _key_range(shape, s.row_block)
            tokens = min((s.last + 1) * S_INNER, hi) - max(s.first * S_INNER, lo)
            if tokens <= 0:  # wholly above the diagonal or before the window: skipped
                continue
            full, tail = divmod(tokens, S_INNER)
            parts += [(steps(rows, S_INNER, False), full)] if full else []
            parts += [(steps(rows, tail, shape.causal), 1)] if tail else []
            loads[core] += (steps.gm(rows * d * b, d * b, io_miss)
                            + steps.gm(rows * v * b, v * b, io_miss) + steps.final_s(rows))
            handed += handover_bytes(rows, tokens, v, b, math.ceil(tokens / S_INNER))
            streamed += tokens * (d + v) * b + rows * (d + v) * b
        if parts:
            loads[core] += _pipelined(parts)
    combine = max((combine_s(profile, min(M_BASE, total_rows - row * M_BASE), n, v, b)
                   for (_, row), n in dealing.split.items()), default=0.0)
    busiest = float(loads.max())
    # every block's hand-over is written and read once, its K/V read through L2 (from
    # HBM once): with every core busy at long sequences the cores together meet L2's
    # rates, and the kernel slows as a queue does near a shared limit
    l2 = l2_seconds(profile, handed / 2 + streamed, handed / 2)
    hbm = (0.0 if warm else shape.hbm_bytes) / profile.hbm_bandwidth()
    floor = roofline_s(profile, shape)
    used = loads[loads > 0]
    return FiaPrefillCost(max(contended(busiest, l2, hbm) + combine + MIX_HEAD_S, floor), busiest,
                          float(used.mean()) if used.size else 0.0, combine, int(used.size),
                          dealing.max_split, floor)


def fia_prefill_seconds(profile: SocProfile, shape: PrefillAttention) -> float:
    """The library charge of a prefill: CANN's FIA, what a deployment calls."""
    return fia_prefill_cost(profile, shape).total_s
