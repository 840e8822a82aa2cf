"""Prefill attention on the AI cores: Q blocks, KV streaming, causal skipping, occupancy.

A unit (sequence, Q head, Q block) runs on one AI core: its cube core keeps
the Q block in L1, streams K and V of its KV head from GM in ``kv_tile``
steps, computes S = Q K^T and O += P V; its two vector cores run each step's
online softmax (max, exp, sum, cast to P, rescale of O) and hand P back to
the cube through GM/L2, as CANN's cube/vector split kernel does. With
``pipeline = 2`` the three stages overlap and a step costs the slowest of
them; with ``pipeline = 1`` they run in turn and each load pays the HBM
latency. Under a causal mask a unit stops at the KV block holding its last
row (the diagonal block is computed whole and masked on the vector cores),
so late Q blocks cost more than early ones and how units are dealt to cores
decides the busiest core, which the kernel waits for. Never faster than
the chip floor (FLOPs at cube peak, Q/K/V/O once at HBM bandwidth).

CANN's PromptFlashAttention deals its units to the vector cores, not to the
AI cores (``balanced``): its host tiling splits the units over ``aivNum``
cores (``coreNum = compileInfoPtr->aivNum``, prompt_flash_attention_tiling.cpp)
and launches ``CalcTschBlockDim(used AIVs, aicNum, aivNum)`` AI cores, so a
unit's softmax runs on one vector core and the two vector cores of an AI core
share its cube core: the cube streams and multiplies both their units, and
16 units busy 8 AI cores twice over. catlass's and the PTO kernels' ``cyclic``
dealing gives a unit a whole AI core, its rows split over both vector cores.

The per-step stage costs reuse the decode model's (decode_attention.py):
GM streaming and hand-over from the calibrated GEMM fits (pipes/transfer.py,
pipes/launch.py), MMAD timing from the msKPP fit (pipes/cube.py), vector widths
from the hardware and instruction counts from the algorithm. No attention
timing was used to set any constant; calibration/published_layer_ops.py checks the
model against the only published 910B2 fused-attention timings found.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aoe_optuna.aicore.attention.flash_step import cube_step_s, final_output_s, softmax_step_s
from aoe_optuna.aicore.attention.steps import (
    HBM_LATENCY_S,
    STEP_FLAG_S,
    VECTOR_CORES_PER_AI_CORE,
    Stages,
    best_of,
    core_stream,
    cube_peak_flops,
    handover_bytes,
    tiling_charge,
)
from aoe_optuna.aicore.gemm.traffic import L2_USABLE_FRACTION
from aoe_optuna.aicore.pipes.launch import MIX_HEAD_S
from aoe_optuna.aicore.pipes.shared_memory import contended, l2_seconds
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.prefill_attention import (
    PrefillAttention,
    PrefillTiling,
    band_cut,
    cann_default_tiling,
    feasible_tilings,
    q_blocks,
    violations,
    visible_tokens,
)


@dataclass(frozen=True)
class PrefillCost:
    """Seconds of one prefill attention call and where they go (busiest core)."""

    total_s: float
    busiest_core_s: float
    mean_core_s: float  # the busiest core over this is the dealing's imbalance
    stream_s: float  # K/V GM->L1, summed over every unit
    cube_s: float
    vector_s: float
    units: int
    busy_cores: int
    roofline_s: float


def roofline_s(profile: SocProfile, shape: PrefillAttention) -> float:
    """The chip floor: FLOPs at cube peak or Q/K/V/O once at HBM bandwidth."""
    return max(shape.hbm_bytes / profile.hbm_bandwidth(), shape.flops / cube_peak_flops(profile))


def floor_s(profile: SocProfile, shape: PrefillAttention) -> float:
    """The least any tiling can take in this model: Q/K/V/O once at HBM bandwidth plus
    the launch head :func:`prefill_attention_cost` charges, or the roofline."""
    return max(shape.hbm_bytes / profile.hbm_bandwidth() + MIX_HEAD_S,
               roofline_s(profile, shape))


@dataclass(frozen=True)
class FlashStages(Stages):
    """A step's stages, the cube's split into its two matmuls (S = Q K^T, O += P V)."""

    bmm1: float = 0.0
    bmm2: float = 0.0


# Vector cores one unit's softmax runs on when CANN deals units to vector cores.
BALANCED_UNIT_AIVS = 1


class StepCosts:
    """Stage costs of one step, memoised per (rows, tokens, diagonal) within one call."""

    def __init__(self, profile: SocProfile, shape: PrefillAttention, t: PrefillTiling,
                 kv_miss: float, aivs: int = VECTOR_CORES_PER_AI_CORE) -> None:
        self.profile, self.shape, self.t, self.kv_miss = profile, shape, t, kv_miss
        self.aivs = aivs
        self.stream = core_stream(profile)
        self.cache: dict[tuple[int, int, bool], FlashStages] = {}

    def __call__(self, rows: int, tokens: int, diagonal: bool) -> FlashStages:
        key = (rows, tokens, diagonal)
        if key not in self.cache:
            self.cache[key] = self._stages(rows, tokens, diagonal)
        return self.cache[key]

    def gm(self, nbytes: float, run: float, miss: float) -> float:
        return float(self.stream.seconds(np.array(nbytes), np.array(run), np.array(run),
                                         np.array(miss)))

    def _stages(self, rows: int, tokens: int, diagonal: bool) -> FlashStages:
        t, shape = self.t, self.shape
        d, v, b = shape.head_dim, shape.v_dim, shape.dtype_bytes
        loads = math.ceil(tokens / t.l1_tile)
        run = min(t.l1_tile, tokens)

        # MTE2: K and V of the step (BNSD: a head's rows are contiguous), the first
        # read of each from HBM and the re-reads from L2; P back through L2.
        stream_s = (self.gm(tokens * d * b, run * d * b, self.kv_miss)
                    + self.gm(tokens * v * b, run * v * b, self.kv_miss))
        stream_s += self.gm(rows * tokens * b, tokens * b, 0.0)
        if t.pipeline == 1:
            stream_s += 2 * loads * HBM_LATENCY_S

        bmm1_s, bmm2_s = cube_step_s(self.profile, rows, d, v, tokens, b)
        # Vector: the online softmax of the step's scores on each vector core's rows (the
        # mask's select on the diagonal block), S in and P out chunk by chunk, then the
        # previous PV partial folded into O; every instruction at its measured rate.
        vector_s = softmax_step_s(self.profile, math.ceil(rows / self.aivs), tokens, v,
                                  self.dtype, masked=diagonal, first=False)
        return FlashStages(stream_s, bmm1_s + bmm2_s, vector_s, bmm1_s, bmm2_s)

    @property
    def dtype(self) -> str:
        return "fp32" if self.shape.dtype_bytes == 4 else "fp16"

    def final_s(self, rows: int) -> float:
        """The unit's last O pass on its vector cores (they split the rows)."""
        return final_output_s(self.profile, math.ceil(rows / self.aivs), self.shape.v_dim,
                              self.dtype)


def unit_cost(steps: StepCosts, t: PrefillTiling, rows: int, tokens: int,
          causal: bool, band: bool = False) -> tuple[float, Stages]:
    """(seconds, summed stages) of one unit over ``tokens`` keys; ``band``: a sliding
    window cuts the unit's first block too, which is masked like the diagonal."""
    full, tail = divmod(tokens, t.kv_tile)
    parts = [(steps(rows, t.kv_tile, False), full)]
    if tail:
        parts.append((steps(rows, tail, causal), 1))
    elif causal:  # the diagonal falls in the last full block
        parts = [(steps(rows, t.kv_tile, False), full - 1), (steps(rows, t.kv_tile, True), 1)]
    if band and parts[0][1] > 0:
        parts = [(steps(rows, t.kv_tile, True), 1), (parts[0][0], parts[0][1] - 1), *parts[1:]]
    parts = [(s, n) for s, n in parts if n]
    total = Stages(*(sum(getattr(s, f) * n for s, n in parts)
                      for f in ("stream", "cube", "vector")))
    if t.pipeline == 1:
        seconds = total.stream + total.cube + total.vector + STEP_FLAG_S * sum(
            n for _, n in parts)
    else:
        seconds = sum((max(s.stream, s.cube, s.vector) + STEP_FLAG_S) * n for s, n in parts)
        first, last = parts[0][0], parts[-1][0]
        # before the first softmax: the first K load and its S; after the last one: its PV
        seconds += HBM_LATENCY_S + first.stream / 2 + first.bmm1 + last.bmm2
    return seconds, total


def _cube_side(t: PrefillTiling, total: Stages, steps: int) -> float:
    """Seconds the cube core is busy with one unit (its K/V stream and MMADs), the
    share a second unit on the same AI core waits for."""
    if t.pipeline == 1:
        return total.stream + total.cube + STEP_FLAG_S * steps
    return max(total.stream, total.cube) + STEP_FLAG_S * steps + HBM_LATENCY_S


def kv_miss(shape: PrefillAttention, t: PrefillTiling, *, l2_hit: bool = False) -> float:
    """Fraction of K/V reads that come from HBM: each key is fetched once, every
    other read of it (by later Q blocks and the other Q heads of its group) hits
    L2. Assumes the K/V of the heads in flight fit L2 (192 MB on a 910B: 4 KV
    heads of a 32k sequence take 64 MB)."""
    if l2_hit:
        return 0.0
    reads = sum(visible_tokens(shape, t, i) for i in range(q_blocks(shape, t)))
    return min(1.0, shape.keys / (shape.group * reads))


def l2_resident(profile: SocProfile, shape: PrefillAttention) -> bool:
    """Whether Q, K, V and O together fit the usable L2 (traffic.L2_USABLE_FRACTION of
    the profile's L2): a call timed in a loop then finds them there, every read a hit."""
    return shape.hbm_bytes <= profile.l2_bytes * L2_USABLE_FRACTION


def _owners(shape: PrefillAttention, t: PrefillTiling, blocks: int, cores: int) -> np.ndarray:
    """The core (cube core for ``cyclic``, vector core for ``balanced``) of every unit
    (Q head, sequence, Q block; CANN's order)."""
    units = blocks * shape.q_heads * shape.batch
    if t.dealing == "cyclic":
        owner = np.arange(units) % cores
    else:
        # CANN weighs a Q block by the keys it sees (a causal block by its index + 1,
        # in sOuter blocks; a full one by its KV loop count) and cuts the sequence
        # of units into runs of equal weight; a unit goes to the run holding its
        # midpoint.
        # no core takes less than one unit, so fewer units than cores fill the first
        # cores one each (the two vector cores of an AI core then share its cube)
        weight = np.array([visible_tokens(shape, t, i) for i in range(blocks)], float)
        w = np.tile(weight, shape.q_heads * shape.batch)
        target = max(w.sum() / cores, float(w.max()))
        owner = np.minimum(cores - 1, ((np.cumsum(w) - w / 2) // target).astype(int))
    return owner


def _core_loads(profile: SocProfile, shape: PrefillAttention, t: PrefillTiling,
                unit_s: np.ndarray, cube_s: np.ndarray) -> np.ndarray:
    """Seconds per AI core once the units are dealt. ``cyclic``: a unit per AI core
    in turn (``unit_s``, both vector cores on its rows). ``balanced`` (CANN): the
    units go to the vector cores (``unit_s`` with one vector core each); the two
    vector cores of an AI core share its cube, which serves both their units
    (``cube_s``), so the AI core takes the longer of its cube's summed work and
    either vector core's own chain."""
    copies = shape.q_heads * shape.batch
    per_unit = np.tile(unit_s, copies)
    cores = profile.cube_cores
    if t.dealing == "cyclic":
        owner = _owners(shape, t, unit_s.size, cores)
        return np.bincount(owner, weights=per_unit, minlength=cores)
    aivs = profile.vector_cores
    owner = _owners(shape, t, unit_s.size, aivs)
    chain = np.bincount(owner, weights=per_unit, minlength=aivs)
    cube = np.bincount(owner // VECTOR_CORES_PER_AI_CORE, weights=np.tile(cube_s, copies),
                       minlength=aivs // VECTOR_CORES_PER_AI_CORE)
    pairs = chain.reshape(-1, VECTOR_CORES_PER_AI_CORE).max(axis=1)
    return np.maximum(cube, pairs)


def prefill_attention_cost(profile: SocProfile, shape: PrefillAttention,
                           t: PrefillTiling, *, looped: bool = False) -> PrefillCost:
    """Modelled time of ``shape`` under tiling ``t``; a tiling the rules refuse raises.

    ``looped``: the call is timed back to back in a loop, so a working set that
    fits L2 (:func:`l2_resident`) is read from L2, not HBM."""
    broken = violations(profile, shape, t)
    if broken:
        raise ValueError(f"prefill attention tiling {t}: {'; '.join(broken)}")
    blocks = q_blocks(shape, t)
    aivs = BALANCED_UNIT_AIVS if t.dealing == "balanced" else VECTOR_CORES_PER_AI_CORE
    warm = looped and l2_resident(profile, shape)
    miss = kv_miss(shape, t, l2_hit=warm)
    io_miss = 0.0 if warm else 1.0
    steps = StepCosts(profile, shape, t, miss, aivs)
    d, v, b = shape.head_dim, shape.v_dim, shape.dtype_bytes
    unit_s = np.empty(blocks)
    cube_s = np.empty(blocks)
    sums = np.zeros(3)
    handed = 0.0  # bytes one copy of the units hands between cube and vector through GM
    streamed = 0.0  # K, V and Q bytes one copy of the units reads, O bytes it writes
    for i in range(blocks):
        rows = min(t.q_tile, shape.seq_len - i * t.q_tile)
        tokens = visible_tokens(shape, t, i)
        handed += handover_bytes(rows, tokens, v, b, math.ceil(tokens / t.kv_tile))
        streamed += tokens * (d + v) * b + rows * (d + v) * b
        seconds, stages = unit_cost(steps, t, rows, tokens, shape.causal, band_cut(shape, t, i))
        # Q in once, O out once.
        io = (steps.gm(rows * d * b, d * b, io_miss)
              + steps.gm(rows * v * b, v * b, io_miss))
        unit_s[i] = seconds + io + steps.final_s(rows)
        cube_s[i] = _cube_side(t, stages, math.ceil(tokens / t.kv_tile)) + io
        sums += (stages.stream, stages.cube, stages.vector)
    copies = shape.q_heads * shape.batch
    loads = _core_loads(profile, shape, t, unit_s, cube_s)
    busiest = float(loads.max())
    floor = roofline_s(profile, shape)
    # every unit's hand-over goes through L2 at once (a small workspace each, reused
    # step after step, so it stays there) beside the K/V each unit streams; the K/V, Q
    # and O reads that miss L2 through HBM; with every core busy the cores together
    # meet L2's rates and the kernel slows as a queue does near a shared limit
    l2_s = l2_seconds(profile, copies * (handed / 2 + streamed), copies * handed / 2)
    hbm_s = (0.0 if warm else shape.hbm_bytes) / profile.hbm_bandwidth()
    return PrefillCost(
        total_s=max(contended(busiest, l2_s, hbm_s) + MIX_HEAD_S, floor), busiest_core_s=busiest,
        mean_core_s=float(loads.mean()), stream_s=float(sums[0] * copies),
        cube_s=float(sums[1] * copies), vector_s=float(sums[2] * copies),
        units=blocks * copies, busy_cores=int(np.count_nonzero(loads)), roofline_s=floor,
    )


def default_cost(profile: SocProfile, shape: PrefillAttention) -> PrefillCost:
    """Cost at the tiling CANN's PromptFlashAttention would pick."""
    return prefill_attention_cost(profile, shape, cann_default_tiling(profile, shape))


def best_tiling(profile: SocProfile, shape: PrefillAttention) -> tuple[PrefillTiling,
                                                                       PrefillCost]:
    """The fastest feasible tiling by exhaustive search (at most a few hundred points).

    As for decode, a tiling must beat the CANN default (then the best so far)
    by more than ``TIE`` to replace it; among ties the larger tiles are kept.
    """
    return best_of(cann_default_tiling(profile, shape), feasible_tilings(profile, shape),
                   lambda t: prefill_attention_cost(profile, shape, t))


def prefill_attention_charge(profile: SocProfile,
                             tiling: str) -> Callable[[PrefillAttention], float]:
    """Seconds per call at CANN's ``default`` tiling or the ``best`` one, for forward.py."""
    return tiling_charge(profile, tiling, default_cost, best_tiling)
