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
  per cycle, plus an issue cost per instruction and tile;
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
    compute_s = (elements * op.ops_per_element / lanes
                 + tiles * op.ops_per_element * ISSUE_CYCLES_PER_INSTRUCTION) / clock
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
