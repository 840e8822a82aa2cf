"""The vector cores running a norm, SwiGLU or rope kernel: copy-in, compute, copy-out.

Each launched vector core takes its share of the units (a norm's rows, an
elementwise kernel's tiles) and walks it tile by tile through UB:

* copy-in / copy-out (MTE2 / MTE3): the tile's row tensors at the core's GM
  <-> UB rate, capped by its share of HBM, plus a DataCopy start-up per
  tensor and tile (once, when double buffering issues the next copy under
  this one); a norm whose row does not fit a tile reads the row it
  normalises a second time (the input, or the residual sum the fused kernel
  wrote in its first pass);
* compute: the kernel's vector instructions per element at 64 fp32 lanes
  per cycle, plus an issue cost per instruction and tile; a norm issues its
  instructions row by row (ops-nn RmsNorm/AddRmsNorm: ``Compute`` and
  ``ComputeSingleRow`` loop over the rows of a UB pass), so each row pays
  them, its reduction tree's levels and a scalar round trip for its rstd,
  however many rows share a tile;
* with double buffering copy and compute overlap (the slower one sets the
  pace, the faster one is paid once to fill the pipe); without, they add.

The kernel lasts as long as its busiest core, never less than the whole
call's bytes at HBM bandwidth, plus a launch head; the unfused add + RMSNorm
is two kernels (an Add, then an RmsNorm), each with its head and its passes.

Constants and where they come from (none was fitted to a vector-kernel timing):
the GM->UB rate is msKPP's theoretical 128 B/cycle/core (the project's
../shared/reference/ascend-910b.md); 256 B per vector repeat is the Ascend C
vector width; the DataCopy start-up is the GM->L1 fit of transfer.py (the
same HBM latency); the launch head is the cube kernel's fitted head
(backend.KERNEL_LAUNCH_S), assumed equal for a vector-only launch; the issue
cost per instruction is an assumed order of magnitude.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aoe_optuna.backends.simulator import transfer
from aoe_optuna.backends.simulator.backend import KERNEL_LAUNCH_S
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.constraints import Columns
from aoe_optuna.workload.vector_ops import VectorOp
from aoe_optuna.workload.vector_space import default_config, vector_space, work_units

GM_UB_BYTES_PER_CYCLE = 128.0  # msKPP TheoreticalBandwidth(), GM->UB per vector core
VECTOR_BYTES_PER_REPEAT = 256.0  # one vector repeat, one per cycle
FP32_BYTES = 4.0
ISSUE_CYCLES_PER_INSTRUCTION = 30.0  # assumed: scalar issue + pipe flag per instruction/tile
# Assumed: a norm row's rstd leaves the vector pipe (V->S flag), takes the scalar
# unit's sqrt and divide, and comes back (S->V flag) before the row can be scaled.
SCALAR_RSTD_CYCLES = 100.0
REDUCE_REPEAT = 64  # fp32 elements the final WholeReduceSum takes: the tree stops there

# Vector instructions per element of a norm, by dtype, counted in ops-nn's kernels
# (norm/rms_norm/op_kernel/rms_norm.h, norm/add_rms_norm/op_kernel/add_rms_norm.h):
# RmsNorm fp32: square, reduce (the halving adds sum to one pass), scale by rstd,
# scale by gamma; fp16/bf16 adds the cast of x, the cast of gamma (every row) and the
# cast of y. AddRmsNorm fp32: + the add; fp16: add in fp16, cast, square, scale by
# 1/n, reduce, scale by rstd, cast, gamma; bf16 casts both inputs, rounds the sum
# back to bf16 and up again, and casts gamma and y.
NORM_INSTRUCTIONS: dict[tuple[str, str], int] = {
    ("rmsnorm", "fp32"): 4, ("rmsnorm", "fp16"): 7, ("rmsnorm", "bf16"): 7,
    ("add_rmsnorm", "fp32"): 6, ("add_rmsnorm", "fp16"): 8, ("add_rmsnorm", "bf16"): 13,
}


def instructions_per_element(op: VectorOp) -> float:
    """Vector instructions per element: a norm's from ops-nn's kernels by dtype, the
    elementwise kernels' from their arithmetic (fp16 in and out; fp32 skips the
    two casts)."""
    if (op.kind, op.dtype) in NORM_INSTRUCTIONS:
        return float(NORM_INSTRUCTIONS[(op.kind, op.dtype)])
    casts = 2.0 if op.dtype == "fp32" else 0.0
    return float(op.ops_per_element) - casts


def row_overhead_cycles(op: VectorOp) -> float:
    """A norm row's fixed cost: every instruction issued for it (those per element and
    one per level of its halving reduction tree) and the scalar round trip of its rstd."""
    levels = max(0.0, np.ceil(np.log2(max(op.width, 1) / REDUCE_REPEAT)))
    return ((instructions_per_element(op) + levels) * ISSUE_CYCLES_PER_INSTRUCTION
            + SCALAR_RSTD_CYCLES)


@dataclass(frozen=True)
class VectorCost:
    """Seconds of one call and its parts (busiest core)."""

    total_s: float
    copy_s: float
    compute_s: float
    roofline_s: float


def _one_kernel(profile: SocProfile, op: VectorOp, c: Columns) -> dict[str, np.ndarray]:
    """Seconds of one vector kernel of ``op`` for each config row of ``c``."""
    clock = profile.clock_hz
    b = DTYPE_BYTES[op.dtype]
    tile = np.asarray(c["tile_len"], dtype=float)
    cores = np.asarray(c["cores"], dtype=float)
    units = work_units(op, np.asarray(c["tile_len"])).astype(float)
    per_core_units = np.ceil(units / cores)
    if op.is_norm:
        elements = per_core_units * op.width
        rows_per_tile = np.maximum(np.floor(tile / op.width), 1.0)
        pieces = np.ceil(op.width / tile)  # tiles per row when the row does not fit
        tiles = np.where(tile >= op.width, np.ceil(per_core_units / rows_per_tile),
                         per_core_units * pieces)
        rereads = np.where(tile >= op.width, 0.0, 1.0)  # the second pass over a long row
    else:
        elements = np.minimum(per_core_units * tile, float(op.elements))
        tiles = per_core_units
        rereads = np.zeros_like(tile)
    tensors = op.reads + op.writes
    moved = elements * b * (tensors + rereads)
    rate = np.minimum(GM_UB_BYTES_PER_CYCLE * clock, profile.hbm_bandwidth() / cores)
    startup = transfer.gm_to_l1().startup_s
    db = np.asarray(c["double_buffer"]) != 0
    # the start-up is the HBM latency: with a second buffer the next tile's copy is
    # issued under this one's, so it is exposed once, else once per tile and tensor
    exposed = np.where(db, 1.0, tiles)
    copy_s = moved / rate + exposed * (tensors + rereads) * startup
    lanes = VECTOR_BYTES_PER_REPEAT / FP32_BYTES
    ops = instructions_per_element(op)
    if op.is_norm:  # instructions issued row by row, a long row's pieces each
        pieces = np.ceil(op.width / tile)
        issue = per_core_units * pieces * row_overhead_cycles(op)
    else:
        issue = tiles * ops * ISSUE_CYCLES_PER_INSTRUCTION
    compute_s = (elements * ops / lanes + issue) / clock
    per_tile_copy, per_tile_compute = copy_s / tiles, compute_s / tiles
    overlapped = (np.maximum(copy_s, compute_s)
                  + np.minimum(per_tile_copy, per_tile_compute))
    core_s = np.where(db, overlapped, copy_s + compute_s)
    chip_s = (op.min_bytes + rereads * op.elements * b) / profile.hbm_bandwidth()
    return {"total": KERNEL_LAUNCH_S + np.maximum(core_s, chip_s),
            "copy": copy_s, "compute": compute_s}


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
    """The least any tiling can take in this model: one launch head and the call's bytes
    at HBM bandwidth (the unfused add + RMSNorm pays two heads, so it is never lower)."""
    return KERNEL_LAUNCH_S + op.roofline_s(profile)
