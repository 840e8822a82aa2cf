"""The project's own vector kernel (norms, SwiGLU, rope) on the vector cores: its work
split, its passes and its buffering, on the same vector unit and copy line as CANN's.

The kernel is ``backends/npu/layer_kernels/templates/vector_kernel.cpp``: what an
operator run tunes (``tile_len``, ``cores``, ``double_buffer``, ``fused``) and
exports. Each launched core takes every ``cores``-th unit (a norm's row, a SwiGLU
or add tile, a rope row piece) and walks it through UB:

* a norm row that fits a tile is copied in (x, and the residual when the add is
  fused), cast, summed (the scalar waits on the sum, then on rstd: two round
  trips), then gamma is copied in for the row once the previous copy-out has left
  (``WaitCopyOut``), scaled and copied out; the next row's copy-in runs under this
  row's scaling. With one output buffer the next row's sum also waits for this
  row's copy-out. A row wider than a tile is walked in pieces twice: each piece
  read and summed with the scalar waiting on it, then read again (both inputs when
  fused) and scaled behind its gamma copy;
* SwiGLU and the residual add: per tile both inputs copied in, the arithmetic,
  the copy out; with two buffers a queue the slowest of the three sets the pace,
  with one they add up;
* rope: per row piece x copied in under the previous piece, cos and sin behind
  the previous piece's copy-out, the rotation, the copy out.

Every instruction is priced by :mod:`.kernel_steps` at msKPP's measured rate of its
op and dtype (:mod:`aoe_optuna.aicore.pipes.vector_pipe`), every DataCopy by
``vector_pipe``'s copy line, run and line costs and HBM share, the scalar round trip as
vector_pipe's: the same physics as CANN's RmsNorm, AddRmsNorm and SwiGlu
(:mod:`aoe_optuna.aicore.cann`), so only the two kernels' structure tells them apart.
The call lasts as long as its busiest core, never less than its bytes at HBM bandwidth,
plus the launch head (``KERNEL_LAUNCH_S`` of ``pipes/launch.py``, as CANN's kernels);
the unfused add + RMSNorm is two kernels (an Add, then an RmsNorm), each with its head.
Nothing here was set from a vector kernel's timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aoe_optuna.aicore.pipes import vector_pipe as vp
from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.aicore.vector import kernel_steps as steps
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.constraints import Columns
from aoe_optuna.workload.vector_ops import VectorOp
from aoe_optuna.workload.vector_space import default_config, vector_space, work_units


@dataclass(frozen=True)
class VectorCost:
    """Seconds of one call and its parts (busiest core)."""

    total_s: float
    copy_s: float
    compute_s: float
    roofline_s: float


@dataclass(frozen=True)
class _Copies:
    """DataCopy seconds of one core while ``cores`` cores stream alike (contiguous runs:
    every row tensor of the kernel is read and written a row or a tile at a time)."""

    profile: SocProfile
    cores: np.ndarray

    def into(self, nbytes: np.ndarray | float) -> np.ndarray:
        return vp.copy_seconds(self.profile, nbytes, nbytes, nbytes, self.cores)

    def out(self, nbytes: np.ndarray | float) -> np.ndarray:
        return vp.copy_seconds(self.profile, nbytes, nbytes, nbytes, self.cores, write=True)


def _norm_core(profile: SocProfile, op: VectorOp, tile: np.ndarray, db: np.ndarray,
               rows: np.ndarray, copy: _Copies) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The busiest core's seconds, copy seconds and vector seconds over ``rows`` rows."""
    clock, b = profile.clock_hz, DTYPE_BYTES[op.dtype]
    adds = op.kind == "add_rmsnorm"
    inputs = 2.0 if adds else 1.0
    trip = vp.SCALAR_ROUND_TRIP_CYCLES
    width = float(op.width)
    # a row that fits a tile: one read
    t_in = inputs * copy.into(width * b)
    t_sum = copy.out(width * b) if adds else np.zeros_like(t_in)
    gamma, t_out = copy.into(width * b), copy.out(width * b)
    squares = steps.sum_of_squares_cycles(width) + steps.rstd_cycles() + 2 * trip
    a = (steps.norm_load_cycles(op.dtype, width, adds, True) + squares) / clock
    wait = np.maximum(t_sum - squares / clock, 0.0)  # gamma's copy waits for the sum's
    scale = steps.norm_scale_cycles(op.dtype, width) / clock
    period = np.where(db, a + wait + gamma + np.maximum(scale, t_in),
                      a + wait + gamma + np.maximum(scale + t_out, t_in))
    period = np.maximum(period, np.maximum(t_in + gamma, t_out + t_sum))
    whole = t_in + rows * period + np.where(db, t_out, 0.0)
    whole_copy = rows * (t_in + gamma + t_out + t_sum)
    whole_vector = rows * (a + scale)
    # a row in pieces: read and summed piece by piece, then read again and scaled
    pieces = np.ceil(width / tile)
    n = width / pieces
    p_in = inputs * copy.into(n * b)
    p_sum = copy.out(n * b) if adds else np.zeros_like(p_in)
    p_gamma, p_out = copy.into(n * b), copy.out(n * b)
    first = (steps.norm_load_cycles(op.dtype, n, adds, True)
             + steps.sum_of_squares_cycles(n) + trip) / clock
    second = (steps.norm_load_cycles(op.dtype, n, adds, False)
              + steps.norm_scale_cycles(op.dtype, n)) / clock
    one_pass = pieces * (p_in + first)
    again = p_in + pieces * np.maximum(p_gamma + second + p_out, p_in + p_gamma)
    row = one_pass + (steps.rstd_cycles() + trip) / clock + again
    split = rows * row
    split_copy = rows * pieces * (2 * p_in + p_sum + p_gamma + p_out)
    split_vector = rows * pieces * (first + second)
    fits = tile >= width
    return (np.where(fits, whole, split), np.where(fits, whole_copy, split_copy),
            np.where(fits, whole_vector, split_vector))


def _elementwise_core(profile: SocProfile, op: VectorOp, tile: np.ndarray, db: np.ndarray,
                      units: np.ndarray, copy: _Copies,
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The busiest core's seconds, copy seconds and vector seconds over ``units`` tiles
    (SwiGLU, the add) or row pieces (rope)."""
    clock, b = profile.clock_hz, DTYPE_BYTES[op.dtype]
    if op.kind == "rope":
        n = op.width / np.ceil(op.width / tile)
        t_in, t_out = copy.into(n * b), copy.out(n * b)
        trig = 2 * copy.into(op.head_dim * b)  # cos and sin, behind the last copy-out
        vector = steps.rope_piece_cycles(op.dtype, n, op.head_dim) / clock
        period = np.maximum(trig + vector + t_out, t_in + trig)
        core = t_in + units * period
        return core, units * (t_in + trig + t_out), units * vector
    n = np.minimum(tile, float(op.elements))
    t_in = 2 * copy.into(n * b)  # two inputs, one after the other on MTE2
    t_out = copy.out(n * b)
    cycles = (steps.swiglu_tile_cycles(op.dtype, n) if op.kind == "swiglu"
              else steps.add_tile_cycles(op.dtype, n))
    vector = cycles / clock
    piped = t_in + (units - 1) * np.maximum(np.maximum(t_in, vector), t_out) + vector + t_out
    core = np.where(db, piped, units * (t_in + vector + t_out))
    return core, units * (t_in + t_out), units * vector


def chip_seconds(profile: SocProfile, op: VectorOp, tile: np.ndarray) -> np.ndarray:
    """The call's chip floor (:func:`.vector_pipe.chip_floor_s`: reads from HBM, the
    output into L2): every tensor once, a norm row in pieces read twice."""
    b = DTYPE_BYTES[op.dtype]
    rows_bytes = op.elements * b
    rereads = np.where(op.is_norm & (tile < op.width), float(op.reads), 0.0)
    read = op.reads * rows_bytes + op.side_bytes + rereads * rows_bytes
    return vp.chip_floor_s(profile, read, float(op.writes * rows_bytes))


def _one_kernel(profile: SocProfile, op: VectorOp, c: Columns) -> dict[str, np.ndarray]:
    """Seconds of one vector kernel of ``op`` for each config row of ``c``."""
    tile = np.asarray(c["tile_len"], dtype=float)
    cores = np.asarray(c["cores"], dtype=float)
    db = np.asarray(c["double_buffer"]) != 0
    if op.kind == "rope":  # the kernel deals row pieces, one token's cos/sin each
        units = op.rows * np.ceil(op.width / tile)
    else:
        units = work_units(op, np.asarray(c["tile_len"])).astype(float)
    units = np.ceil(units / cores)
    copy = _Copies(profile, cores)
    core = _norm_core if op.is_norm else _elementwise_core
    core_s, copy_s, compute_s = core(profile, op, tile, db, units, copy)
    total = KERNEL_LAUNCH_S + np.maximum(core_s, chip_seconds(profile, op, tile))
    return {"total": total, "copy": copy_s, "compute": compute_s}


def vector_op_seconds(profile: SocProfile, op: VectorOp, c: Columns) -> dict[str, np.ndarray]:
    """Seconds per config row; the unfused add + RMSNorm is an Add kernel then an RmsNorm."""
    if op.kind != "add_rmsnorm":
        return _one_kernel(profile, op, c)
    fused = _one_kernel(profile, op, c)
    add = _one_kernel(profile, VectorOp("add", op.rows, op.width, op.dtype), c)
    norm = _one_kernel(profile, VectorOp("rmsnorm", op.rows, op.width, op.dtype), c)
    on = np.asarray(c["fused"]) != 0
    return {key: np.where(on, fused[key], add[key] + norm[key])
            for key in ("total", "copy", "compute")}


def vector_op_cost(profile: SocProfile, op: VectorOp, config: dict[str, Any]) -> VectorCost:
    """Modelled time of ``op`` under ``config``; an infeasible config raises."""
    space = vector_space(profile, op)
    full = space.full_config(config)
    broken = space.explain(full)
    if broken:
        raise ValueError(f"{op.label} {config}: {'; '.join(broken)}")
    cols = space.columns(space.index(full)[None, :])
    s = vector_op_seconds(profile, op, cols)
    return VectorCost(float(s["total"][0]), float(s["copy"][0]), float(s["compute"][0]),
                      op.roofline_s(profile))


def best_vector_config(profile: SocProfile, op: VectorOp) -> tuple[dict[str, Any], VectorCost]:
    """The fastest feasible config by exhaustive search (at most a few hundred points):
    the per-operator limit a sampler's result is compared with."""
    space = vector_space(profile, op)
    idx = space.all_feasible()
    seconds = vector_op_seconds(profile, op, space.columns(idx))["total"]
    best = space.config(idx[int(np.argmin(seconds))])
    return best, vector_op_cost(profile, op, best)


def default_vector_cost(profile: SocProfile, op: VectorOp) -> tuple[dict[str, Any], VectorCost]:
    config = default_config(profile, op)
    return config, vector_op_cost(profile, op, config)


def floor_s(profile: SocProfile, op: VectorOp) -> float:
    """The least any tiling can take in this model: one launch head and the call's chip
    floor, every tensor once (the unfused add + RMSNorm pays two heads, so it is never
    lower)."""
    b = DTYPE_BYTES[op.dtype]
    return KERNEL_LAUNCH_S + float(vp.chip_floor_s(
        profile, float(op.reads * op.elements * b + op.side_bytes),
        float(op.writes * op.elements * b)))
