"""What every fused attention kernel model shares: a step's three stages, how a unit's
steps overlap, the online softmax on the vector cores, sliced MMADs and the
flash-decoding combine.

Decode (GQA/MQA and MLA) and prefill attention run the same loop on an AI core:
the cube core streams a KV block from GM (MTE2), computes S = Q K^T and the
PV partial, the two vector cores run the online softmax and rescale O. The
models differ in what a step moves and multiplies, not in these costs, so
they live here once.

Constants reuse the GEMM model's: per-core GM streaming and the cross-core
hand-over are the fits of scripts/calibrate_simulator.py (pipes/transfer.py,
pipes/launch.py), MMAD timing is the msKPP fit (pipes/cube.py). The vector-core
figures below are hardware widths, not fitted; the per-step flag cost is an
assumed order of magnitude. No attention timing was used to set any of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from aoe_optuna.aicore.pipes import cube, transfer
from aoe_optuna.aicore.pipes.launch import HANDOVER_S
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.prefill_attention import ACCUMULATOR_BYTES, L0_K, L0_N

# Ascend C vector instructions process 256 B per repeat, one repeat per cycle
# (64 fp32 lanes); two vector cores per AI core (../shared/reference/ascend-910b.md).
VECTOR_BYTES_PER_CYCLE = 256
VECTOR_CORES_PER_AI_CORE = 2
# Vector instructions per score of the online softmax: max, subtract, exp (charged
# as 2 repeats), sum, cast to P. Counted from the algorithm, not measured.
VECTOR_OPS_PER_SCORE = 6
# Per output element and step: rescale O by exp(m_old - m_new) and add P V.
VECTOR_OPS_PER_OUTPUT = 3
# Per masked score (a causal diagonal block): select -inf where the key is past the row.
VECTOR_OPS_PER_MASKED_SCORE = 1
# GM<->UB mover, bytes per cycle per vector core (msKPP TheoreticalBandwidth()).
GM_UB_BYTES_PER_CYCLE = 128
# Assumed (not measured): set/wait cross-core flags cube -> vector -> cube per step.
STEP_FLAG_S = 0.3e-6
TIE = 1e-3  # relative gain below which a tiling does not displace the default
HBM_LATENCY_S = transfer.gm_to_l1().startup_s  # exposed per load without double buffering


@dataclass(frozen=True)
class Stages:
    """Seconds of one softmax step's three stages on one AI core."""

    stream: float  # MTE2: K/V (or the latent) GM->L1, P back through L2
    cube: float  # MMADs, L1->L0 loads, FixPipe
    vector: float  # online softmax and rescale of O


def core_stream(profile: SocProfile) -> transfer.StreamCosts:
    """One AI core's GM->L1 streaming costs (transfer.py's fits), never faster than the
    single-core GM->L1 rate msKPP measured (transfer.gm_to_l1, 283 GB/s on a 910B1):
    the fitted L2-hit line alone would let one core read L2 at 700 GB/s, which the
    GEMM fit never asks of a lone core but an attention kernel re-reading its K/V from
    a warm L2 would."""
    measured = transfer.gm_to_l1().bytes_per_s / profile.clock_hz
    return transfer.gm_stream(min(profile.gm_to_l1_bytes_per_cycle, measured), profile.clock_hz)


def unit_seconds(pipeline: int, steps: Sequence[Stages]) -> float:
    """One unit's steps, overlapped (pipeline 2: the slowest stage per step, plus the
    first load and the last step's drain) or in turn (pipeline 1)."""
    if pipeline == 1:
        return sum(s.stream + s.cube + s.vector + STEP_FLAG_S for s in steps)
    body = sum(max(s.stream, s.cube, s.vector) + STEP_FLAG_S for s in steps)
    first, last = steps[0], steps[-1]
    return body + HBM_LATENCY_S + min(first.stream, first.cube, first.vector) \
        + min(last.cube, last.vector)


def softmax_vector_s(profile: SocProfile, scores: float, outputs: float, dtype_bytes: int,
                     *, masked: float = 0.0, moved_extra: float = 0.0,
                     aivs: int = VECTOR_CORES_PER_AI_CORE) -> float:
    """Seconds of ``aivs`` vector cores (the AI core's two by default; one where the
    kernel deals a unit to a single vector core) for one step: the online softmax of
    ``scores`` (``masked`` of them also masked), the rescale of ``outputs`` running-O
    elements, and S in / P out (plus ``moved_extra`` bytes) through GM/L2."""
    lanes = VECTOR_BYTES_PER_CYCLE / ACCUMULATOR_BYTES * aivs
    ops = (scores * VECTOR_OPS_PER_SCORE + masked * VECTOR_OPS_PER_MASKED_SCORE
           + outputs * VECTOR_OPS_PER_OUTPUT)
    moved = scores * (ACCUMULATOR_BYTES + dtype_bytes) + moved_extra
    return (ops / lanes + moved / (GM_UB_BYTES_PER_CYCLE * aivs)) / profile.clock_hz


def flash_cube_s(profile: SocProfile, rows: int, qk_dim: int, v_dim: int, tokens: int,
                 dtype_bytes: int, fixpipe_writes: int, pipeline: int) -> float:
    """The cube core's seconds for one step of ``rows`` query rows over ``tokens`` keys.

    QK^T (rows x qk_dim x tokens) and PV (rows x tokens x v_dim) in MMADs of
    ``L0_K``-deep, ``L0_N``-wide slices; L1->L0A of Q and P, L1->L0B of K and V;
    FixPipe of S and of the PV partial in ``fixpipe_writes`` writes. Ping-pong L0
    buffers (``pipeline`` 2) let MTE1 and FixPipe run beside the MMADs (the rule
    pipeline.py applies to GEMM blocks); one buffer makes them take turns.
    """
    clock = profile.clock_hz
    qk = math.ceil(qk_dim / L0_K) * math.ceil(tokens / L0_N)
    pv = math.ceil(tokens / L0_K) * math.ceil(v_dim / L0_N)
    slice_cycles = float(cube.mmad_cycles(np.array(rows), np.array(L0_K), np.array(L0_N),
                                          np.array(profile.c0["fp16"]),
                                          cube.mmad_startup_cycles(profile.soc)))
    mmad_s = (qk + pv) * slice_cycles / clock
    kv = float(tokens * (qk_dim + v_dim) * dtype_bytes)
    l0b_s = float(transfer.l1_to_l0b().cycles(np.array(kv), clock, qk + pv)) / clock
    l0a_s = float(transfer.l1_to_l0a().cycles(np.array(rows * (qk_dim + tokens) * dtype_bytes
                                                       * 1.0), clock, qk + pv)) / clock
    out = rows * (tokens + v_dim) * ACCUMULATOR_BYTES
    fixpipe_s = float(transfer.l0c_to_gm().cycles(np.array(float(out)), clock,
                                                  fixpipe_writes)) / clock
    if pipeline == 2:
        return max(mmad_s, l0a_s + l0b_s, fixpipe_s)
    return mmad_s + l0a_s + l0b_s + fixpipe_s


def handover_bytes(rows: int, tokens: int, v_dim: int, dtype_bytes: int, steps: int) -> float:
    """GM bytes a unit's cube and vector cores hand each other: the fp32 scores written
    by FixPipe and read by the vector cores, P written back and read by the cube, and
    each step's fp32 PV partial out and in, half of them written and half read. Every
    unit of the chip moves them through L2 at once (a small workspace, reused), so
    together they meet L2's read and write rates (:mod:`..pipes.shared_memory`)."""
    return (rows * tokens * (2 * ACCUMULATOR_BYTES + 2 * dtype_bytes)
            + steps * rows * v_dim * 2 * ACCUMULATOR_BYTES)


def combine_s(profile: SocProfile, rows: int, kv_split: int, v_dim: int,
              dtype_bytes: int) -> float:
    """Flash-decoding's combine: the vector cores read every split's fp32 partial output
    and log-sum-exp of ``rows`` query rows and write O, after one cube/vector hand-over."""
    if kv_split == 1:
        return 0.0
    moved = rows * (kv_split * (v_dim + 2) * ACCUMULATOR_BYTES * 2 + v_dim * dtype_bytes)
    gm_ub = GM_UB_BYTES_PER_CYCLE * profile.vector_cores * profile.clock_hz
    return HANDOVER_S + moved / min(gm_ub, profile.hbm_bandwidth())


def cube_peak_flops(profile: SocProfile) -> float:
    """fp16 FLOP/s of every cube core: the compute side of an attention roofline."""
    return profile.cube_cores * profile.macs_per_cycle["fp16"] * 2 * profile.clock_hz


class _Timed(Protocol):
    total_s: float


T = TypeVar("T")
C = TypeVar("C", bound=_Timed)


def best_of(default: T, candidates: Sequence[T], cost: Callable[[T], C]) -> tuple[T, C]:
    """The fastest of ``candidates`` by exhaustive search, starting from ``default``.

    A tiling must beat the default (and then the best so far) by more than
    ``TIE`` to replace it, so a shape no tiling can speed up (bandwidth-bound)
    reports the default; candidates are tried largest tiles first (the
    enumerations list them last), so among ties the larger tiles are kept.
    """
    best = (default, cost(default))
    for t in reversed(candidates):
        c = cost(t)
        if c.total_s < best[1].total_s * (1.0 - TIE):
            best = (t, c)
    return best


Shape = TypeVar("Shape")


def tiling_charge(profile: SocProfile, tiling: str,
                  default_cost: Callable[[SocProfile, Shape], _Timed],
                  best_tiling: Callable[[SocProfile, Shape], tuple[Any, _Timed]],
                  ) -> Callable[[Shape], float]:
    """Seconds per call of an attention model at its kernel's ``default`` tiling or its
    ``best`` one: the charge forward.py takes, the same choice for every model."""
    if tiling == "default":
        return lambda shape: default_cost(profile, shape).total_s
    if tiling == "best":
        return lambda shape: best_tiling(profile, shape)[1].total_s
    raise ValueError(f"attention tiling: expected 'default' or 'best', got {tiling!r}")
