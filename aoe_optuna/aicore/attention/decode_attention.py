"""Decode attention on the AI cores: KV streaming, cube and vector work, occupancy, combine.

A unit (sequence, KV head, KV split) runs on one AI core (speculative decode's
query tokens fold into the group's rows: space/decode_attention.py): its cube core
streams K and V from HBM (MTE2), computes S = Q K^T and O += P V, and its two
vector cores run the online softmax of each ``block_tile`` step (max, exp,
sum, cast to P, rescale of the running O). With ``pipeline = 2`` the three
stages overlap (ping-pong buffers) and a step costs the slowest of them;
with ``pipeline = 1`` they run in turn and each load pays the HBM latency.

The kernel takes as long as its busiest core (units are dealt to the cube
cores, so batch 1 with 4 KV heads and no split keeps 4 cores busy and reads
the cache at 4 cores' bandwidth), never less than the chip's HBM bandwidth
allows, plus the combine pass when the KV is split and a launch head.

The step stages, their overlap, the softmax's vector cost and the combine are
steps.py's, shared with the prefill and MLA models; no attention
timing was used to set any of their constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aoe_optuna.aicore.attention.steps import (
    HBM_LATENCY_S,
    Stages,
    best_of,
    combine_s,
    core_stream,
    cube_peak_flops,
    softmax_vector_s,
    tiling_charge,
    unit_seconds,
)
from aoe_optuna.aicore.pipes import cube, transfer
from aoe_optuna.aicore.pipes.launch import MIX_HEAD_S
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.decode_attention import (
    ACCUMULATOR_BYTES,
    AttentionTiling,
    DecodeAttention,
    cann_default_tiling,
    feasible_tilings,
    violations,
)
from aoe_optuna.space.paged_kv import tokens_per_unit


@dataclass(frozen=True)
class AttentionCost:
    """Seconds of one decode attention call and where they go (busiest core)."""

    total_s: float
    stream_s: float  # K/V GM->L1 on the busiest core
    cube_s: float
    vector_s: float
    combine_s: float
    busy_cores: int
    roofline_s: float


def roofline_s(profile: SocProfile, shape: DecodeAttention) -> float:
    """The bound forward.py charged before: KV bytes at HBM bandwidth or FLOPs at peak."""
    return max(shape.kv_bytes / profile.hbm_bandwidth(), shape.flops / cube_peak_flops(profile))


def _step(profile: SocProfile, shape: DecodeAttention, t: AttentionTiling,
          tokens: int) -> Stages:
    """The stages of a step over ``tokens`` cached tokens (a full block or the tail)."""
    clock = profile.clock_hz
    d, b, g = shape.head_dim, shape.dtype_bytes, shape.group_rows
    loads = math.ceil(tokens / t.l1_tile)
    mmads = math.ceil(tokens / t.l0_tile)

    # MTE2: K and V of the step, in runs set by the cache layout.
    kv = 2 * tokens * d * b
    if shape.kv_layout == "BNSD":
        run = min(t.l1_tile, shape.page_tokens) * d * b
        stride = run
    else:
        run = d * b
        stride = shape.kv_heads * d * b
    stream = core_stream(profile)
    stream_s = float(stream.seconds(np.array(kv, dtype=float), np.array(run, dtype=float),
                                    np.array(stride), np.array(1.0)))
    if t.pipeline == 1:
        stream_s += 2 * loads * HBM_LATENCY_S

    # Cube: QK^T (g x d x l0) and PV (g x l0 x d) per l0 slice, L1->L0B of K and V,
    # FixPipe of the fp32 scores.
    c0 = np.array(profile.c0["fp16"])
    startup = cube.mmad_startup_cycles(profile.soc)
    qk = cube.mmad_cycles(np.array(g), np.array(d), np.array(t.l0_tile), c0, startup)
    pv = cube.mmad_cycles(np.array(g), np.array(t.l0_tile), np.array(d), c0, startup)
    mmad_s = float(mmads * (qk + pv)) / clock
    l0b_s = float(transfer.l1_to_l0b().cycles(np.array(kv, dtype=float), clock,
                                               2.0 * mmads)) / clock
    scores = g * tokens
    fixpipe_s = float(transfer.l0c_to_gm().cycles(
        np.array(scores * ACCUMULATOR_BYTES, dtype=float), clock, loads)) / clock

    # Vector: softmax of the step's scores, rescale of O, S in and P out through GM/L2.
    vector_s = softmax_vector_s(profile, scores, g * d, b)
    return Stages(stream_s, mmad_s + l0b_s + fixpipe_s, vector_s)


def decode_attention_cost(profile: SocProfile, shape: DecodeAttention,
                          t: AttentionTiling) -> AttentionCost:
    """Modelled time of ``shape`` under tiling ``t``; a tiling the rules refuse raises."""
    broken = violations(profile, shape, t)
    if broken:
        raise ValueError(f"attention tiling {t}: {'; '.join(broken)}")
    d, b = shape.head_dim, shape.dtype_bytes
    tokens = tokens_per_unit(shape, t.kv_split)
    full, tail = divmod(tokens, t.block_tile)
    steps = [_step(profile, shape, t, t.block_tile)] * full
    if tail:
        steps.append(_step(profile, shape, t, tail))
    unit_s = unit_seconds(t.pipeline, steps)

    units = shape.batch * shape.kv_heads * shape.row_blocks * t.kv_split
    busy = min(units, profile.cube_cores)
    per_core_units = math.ceil(units / profile.cube_cores)
    core_s = per_core_units * unit_s
    chip_s = units * 2 * tokens * d * b / profile.hbm_bandwidth()  # pages read whole
    main_s = max(core_s, chip_s)

    combine = combine_s(profile, shape.batch * shape.q_heads * shape.tokens, t.kv_split, d, b)
    total = max(main_s + combine + MIX_HEAD_S, roofline_s(profile, shape))
    return AttentionCost(
        total_s=total, stream_s=per_core_units * sum(s.stream for s in steps),
        cube_s=per_core_units * sum(s.cube for s in steps),
        vector_s=per_core_units * sum(s.vector for s in steps),
        combine_s=combine, busy_cores=busy, roofline_s=roofline_s(profile, shape),
    )


def default_cost(profile: SocProfile, shape: DecodeAttention) -> AttentionCost:
    """Cost at the tiling CANN's IncreFlashAttention would pick."""
    return decode_attention_cost(profile, shape, cann_default_tiling(profile, shape))


def best_tiling(profile: SocProfile, shape: DecodeAttention) -> tuple[AttentionTiling,
                                                                      AttentionCost]:
    """The fastest feasible tiling by exhaustive search (a few thousand points).

    A tiling must beat the CANN default (and then the best so far) by more
    than ``TIE`` to replace it, so a shape no tiling can speed up
    (bandwidth-bound) reports the default, and among tilings that tie the
    one with the larger tiles (fewer instructions) is kept.
    """
    return best_of(cann_default_tiling(profile, shape), feasible_tilings(profile, shape),
                   lambda t: decode_attention_cost(profile, shape, t))


def attention_charge(profile: SocProfile, tiling: str) -> Callable[[DecodeAttention], float]:
    """Seconds per call at CANN's ``default`` tiling or the ``best`` one, for forward.py."""
    return tiling_charge(profile, tiling, default_cost, best_tiling)


def floor_s(profile: SocProfile, shape: DecodeAttention) -> float:
    """The least any tiling can take in this model: the KV cache at HBM bandwidth plus
    the launch head, or the roofline's compute bound."""
    return max(shape.kv_bytes / profile.hbm_bandwidth() + MIX_HEAD_S,
               roofline_s(profile, shape))
