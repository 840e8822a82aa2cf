"""The vector cores running the MoE router's gating (softmax + top-k per token row):
copy-in, compute, copy-out, as :mod:`.vector_ops` models the other vector kernels.

Each launched core takes ``ceil(rows / cores)`` rows and walks them in passes of
``tile_rows`` rows, each row in pieces of ``col_tile`` experts:

* copy-in (MTE2): the logits at the core's GM -> UB rate, capped by its share of
  HBM; a row in more than one piece is read twice (its max and sum first, then its
  weights), as a norm's long row is; copy-out (MTE3): per row, k weights and k
  expert and row indices. Each copy pays the DataCopy start-up: once per stream with
  double buffering, which issues the next copy under this one, else per tile (the
  inputs) and per pass (the outputs);
* compute, per element: the softmax's six vector instructions (cast, max, subtract,
  exp, sum, scale) and top-k's 32-element sort (two: values and indices) plus two
  per merge level of four lists (``ceil(log4(col_tile / 32))``), at 64 fp32 lanes
  per cycle, plus an issue cost per instruction and tile;
* with double buffering copy and compute overlap, else they add.

The call lasts as long as its busiest core, never less than its bytes at HBM
bandwidth, plus the launch head. Every constant is :mod:`.vector_ops`'s; the
instruction counts follow CANN's kernel (Sort32 then MrgSort of up to four lists,
``moe_gating_top_k_softmax_perf.h`` in ops-transformer) and were fitted to no timing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aoe_optuna.aicore.pipes import transfer
from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.aicore.vector.vector_ops import VectorCost
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.constraints import Columns
from aoe_optuna.workload.moe_gating import ALIGN, MoeGating, cann_tiling, gating_space

# The gating model's own vector-core constants (not yet on vector_pipe's measured rates):
GM_UB_BYTES_PER_CYCLE = 128.0  # msKPP TheoreticalBandwidth(), GM->UB per vector core
VECTOR_BYTES_PER_REPEAT = 256.0  # one vector repeat, one per cycle
FP32_BYTES = 4.0
ISSUE_CYCLES_PER_INSTRUCTION = 30.0  # assumed: scalar issue + pipe flag per instruction/tile
SOFTMAX_OPS = 6  # cast, reduce-max, subtract, exp, reduce-sum, scale
SORT_OPS = 2  # Sort32 over (value, index) pairs
MERGE_OPS = 2  # one MrgSort level over the pairs
OUTPUT_COPIES = 3  # weights, expert indices, row indices


def gating_seconds(profile: SocProfile, p: MoeGating, c: Columns) -> dict[str, np.ndarray]:
    """Seconds of one gating call for each config row of ``c``."""
    clock = profile.clock_hz
    b = DTYPE_BYTES[p.dtype]
    cores = np.asarray(c["cores"], dtype=float)
    col_tile = np.asarray(c["col_tile"], dtype=float)
    rows = np.ceil(p.rows / cores)  # the busiest core's
    passes = np.ceil(rows / np.asarray(c["tile_rows"], dtype=float))
    pieces = np.ceil(p.col_align / col_tile)
    tiles = passes * pieces
    rereads = np.where(pieces > 1, 1.0, 0.0)
    moved = rows * (p.experts * b * (1.0 + rereads) + p.out_row_bytes)
    rate = np.minimum(GM_UB_BYTES_PER_CYCLE * clock, profile.hbm_bandwidth() / cores)
    db = np.asarray(c["double_buffer"]) != 0
    # each copy stream (the logits, their second read, three outputs) exposes its
    # start-up once under double buffering, else every tile's inputs and pass's outputs
    startups = np.where(db, 1.0 + rereads + OUTPUT_COPIES,
                        tiles * (1.0 + rereads) + passes * OUTPUT_COPIES)
    copy_s = moved / rate + startups * transfer.gm_to_l1().startup_s
    levels = np.ceil(np.log(np.maximum(col_tile / ALIGN, 1.0)) / math.log(4.0) - 1e-9)
    ops = SOFTMAX_OPS + SORT_OPS + MERGE_OPS * (levels + (pieces > 1))
    lanes = VECTOR_BYTES_PER_REPEAT / FP32_BYTES
    elements = rows * p.col_align
    compute_s = (elements * ops / lanes + tiles * ops * ISSUE_CYCLES_PER_INSTRUCTION) / clock
    overlapped = np.maximum(copy_s, compute_s) + np.minimum(copy_s / tiles, compute_s / tiles)
    core_s = np.where(db, overlapped, copy_s + compute_s)
    chip_s = (p.min_bytes + rereads * p.rows * p.experts * b) / profile.hbm_bandwidth()
    return {"total": KERNEL_LAUNCH_S + np.maximum(core_s, chip_s),
            "copy": copy_s, "compute": compute_s}


def gating_cost(profile: SocProfile, p: MoeGating, config: dict[str, Any]) -> VectorCost:
    """Modelled time of ``p`` under ``config``; an infeasible config raises."""
    space = gating_space(profile, p)
    full = space.full_config(config)
    broken = space.explain(full)
    if broken:
        raise ValueError(f"{p.label} {config}: {'; '.join(broken)}")
    s = gating_seconds(profile, p, space.columns(space.index(full)[None, :]))
    return VectorCost(float(s["total"][0]), float(s["copy"][0]), float(s["compute"][0]),
                      p.roofline_s(profile))


def default_gating_cost(profile: SocProfile, p: MoeGating) -> VectorCost:
    """The time at CANN's host tiling."""
    return gating_cost(profile, p, cann_tiling(profile, p))


def best_gating_config(profile: SocProfile, p: MoeGating) -> tuple[dict[str, Any], VectorCost]:
    """The fastest feasible config by exhaustive search (a few hundred points at most)."""
    space = gating_space(profile, p)
    idx = space.all_feasible()
    seconds = gating_seconds(profile, p, space.columns(idx))["total"]
    best = space.config(idx[int(np.argmin(seconds))])
    return best, gating_cost(profile, p, best)


def floor_s(profile: SocProfile, p: MoeGating) -> float:
    """The least any tiling can take in this model: one launch head and the call's bytes
    at HBM bandwidth."""
    return KERNEL_LAUNCH_S + p.roofline_s(profile)
