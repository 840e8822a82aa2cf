"""MLA decode attention on the AI cores: one latent stream for every head of a block.

A unit (sequence, head block, KV split) runs on one AI core: its cube core
keeps the head block's Q (latent and rope parts) in L1 and walks its part of
the paged latent and rope caches in steps of ``block_pages`` pages. Per step
it streams them GM->L1 once (K and V are the same bytes), computes S = Q K^T over
all 576 values and the PV partial over the first 512, and hands S to the two
vector cores, which run the online softmax and rescale the 512-wide running
O. Without ``resident`` the latent does not stay in L1 and PV re-reads its
V part through L2 (catlass's 128-head kernel). The kernel lasts as long as
its busiest core, never less than the latent cache at HBM bandwidth, plus
the combine when the KV is split and a launch head.

Head blocks of one sequence read the same latent: the first read of a page
comes from HBM, the others hit L2 (``kv_miss``; it assumes the latent of the
units in flight fits the 192 MB L2). Fewer, taller head blocks re-read less
and fill the cube's M; more of them (and KV splits) fill more cores.

The step stages, their overlap, the softmax's vector cost, the MMAD slices
and the combine are steps.py's, shared with the GQA/MQA decode and
prefill models. No attention timing was used to set any constant.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from aoe_optuna.aicore.attention.decode_attention import AttentionCost
from aoe_optuna.aicore.attention.steps import (
    HBM_LATENCY_S,
    Stages,
    best_of,
    combine_s,
    core_stream,
    cube_peak_flops,
    flash_cube_s,
    softmax_vector_s,
    tiling_charge,
    unit_seconds,
)
from aoe_optuna.aicore.pipes.launch import MIX_HEAD_S
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.mla_attention import (
    MlaDecodeAttention,
    MlaTiling,
    block_pages_options,
    catlass_default_tiling,
    feasible_tilings,
    head_blocks,
    head_rows,
    violations,
)
from aoe_optuna.space.paged_kv import tokens_per_unit
from aoe_optuna.space.prefill_attention import ACCUMULATOR_BYTES


def roofline_s(profile: SocProfile, shape: MlaDecodeAttention) -> float:
    """The latent cache once at HBM bandwidth, or the absorbed FLOPs at cube peak."""
    return max(shape.kv_bytes / profile.hbm_bandwidth(), shape.flops / cube_peak_flops(profile))


def floor_s(profile: SocProfile, shape: MlaDecodeAttention) -> float:
    """The least any tiling can take in this model: the roofline's cache read plus the
    launch head, or its compute bound."""
    return max(shape.kv_bytes / profile.hbm_bandwidth() + MIX_HEAD_S, roofline_s(profile, shape))


def kv_miss(shape: MlaDecodeAttention, t: MlaTiling) -> float:
    """Fraction of latent reads that come from HBM: one per head block of a sequence."""
    return 1.0 / head_blocks(shape, t)


def _step(profile: SocProfile, shape: MlaDecodeAttention, t: MlaTiling, tokens: int) -> Stages:
    """The stages of a step over ``tokens`` cached tokens (whole pages)."""
    b, qk, v, page = shape.dtype_bytes, shape.qk_dim, shape.v_dim, shape.page_tokens
    rows = head_rows(t)
    loads = math.ceil(tokens / page)
    stream = core_stream(profile)

    def gm(nbytes: float, run: float, stride: float, miss: float) -> float:
        return float(stream.seconds(np.array(float(nbytes)), np.array(float(run)),
                                    np.array(stride), np.array(miss)))

    # MTE2: the step's latent and rope keys, two paged caches (catlass's k and k_rope,
    # a page of each contiguous); without residency the latent again for PV, from
    # L2; P back through L2.
    rope = qk - v
    miss = kv_miss(shape, t)
    pages = min(page, tokens)
    stream_s = (gm(tokens * v * b, pages * v * b, pages * v * b, miss)
                + gm(tokens * rope * b, pages * rope * b, pages * rope * b, miss))
    if not t.resident:
        stream_s += gm(tokens * v * b, pages * v * b, pages * v * b, 0.0)
    stream_s += gm(rows * tokens * b, tokens * b, tokens * b, 0.0)
    if t.pipeline == 1:
        stream_s += loads * (1 if t.resident else 2) * HBM_LATENCY_S

    cube_s = flash_cube_s(profile, rows, qk, v, tokens, b, 2 * loads, t.pipeline)
    vector_s = softmax_vector_s(profile, rows * tokens, rows * v, b,
                                moved_extra=rows * v * ACCUMULATOR_BYTES)
    return Stages(stream_s, cube_s, vector_s)


def mla_attention_cost(profile: SocProfile, shape: MlaDecodeAttention,
                       t: MlaTiling) -> AttentionCost:
    """Modelled time of ``shape`` under tiling ``t``; a tiling the rules refuse raises."""
    broken = violations(profile, shape, t)
    if broken:
        raise ValueError(f"MLA attention tiling {t}: {'; '.join(broken)}")
    b, qk, v = shape.dtype_bytes, shape.qk_dim, shape.v_dim
    tokens = tokens_per_unit(shape, t.kv_split)
    block = t.block_pages * shape.page_tokens
    full, tail = divmod(tokens, block)
    steps = [_step(profile, shape, t, block)] * full
    if tail:
        steps.append(_step(profile, shape, t, tail))
    rows = head_rows(t)
    stream = core_stream(profile)
    out_bytes = ACCUMULATOR_BYTES if t.kv_split > 1 else b  # a split writes fp32 partials
    q_and_o = float(stream.seconds(np.array([rows * qk * b, rows * v * out_bytes], float),
                                   np.array([qk * b, v * out_bytes], float),
                                   np.array([qk * b, v * out_bytes]), np.array(1.0)).sum())
    unit_s = unit_seconds(t.pipeline, steps) + q_and_o

    units = shape.batch * head_blocks(shape, t) * t.kv_split
    per_core_units = math.ceil(units / profile.cube_cores)
    chip_s = shape.batch * t.kv_split * tokens * qk * b / profile.hbm_bandwidth()
    main_s = max(per_core_units * unit_s, chip_s)
    combine = combine_s(profile, shape.batch * shape.q_heads, t.kv_split, v, b)
    floor = roofline_s(profile, shape)
    return AttentionCost(
        total_s=max(main_s + combine + MIX_HEAD_S, floor),
        stream_s=per_core_units * sum(s.stream for s in steps),
        cube_s=per_core_units * sum(s.cube for s in steps),
        vector_s=per_core_units * sum(s.vector for s in steps),
        combine_s=combine, busy_cores=min(units, profile.cube_cores), roofline_s=floor,
    )


def default_cost(profile: SocProfile, shape: MlaDecodeAttention) -> AttentionCost:
    """Cost at the tiling catlass's MLA example would pick."""
    return mla_attention_cost(profile, shape, catlass_default_tiling(profile, shape))


def best_tiling(profile: SocProfile,
                shape: MlaDecodeAttention) -> tuple[MlaTiling, AttentionCost]:
    """The fastest feasible tiling by exhaustive search, from catlass's default. A step
    longer than a unit's tokens runs the same kernel as the one holding them: only
    that one is tried, so the winner names the step it runs."""
    candidates = [t for t in feasible_tilings(profile, shape)
                  if t.block_pages in block_pages_options(shape, t.kv_split)]
    return best_of(catlass_default_tiling(profile, shape), candidates,
                   lambda t: mla_attention_cost(profile, shape, t))


def mla_attention_charge(profile: SocProfile,
                         tiling: str) -> Callable[[MlaDecodeAttention], float]:
    """Seconds per call at catlass's ``default`` tiling or the ``best`` one, for forward.py."""
    return tiling_charge(profile, tiling, default_cost, best_tiling)
