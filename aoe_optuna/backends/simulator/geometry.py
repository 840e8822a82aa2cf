"""How a GEMM is cut into blocks, K steps and waves of cores (no timing here).

Output blocks are ``tile_m x tile_n``; there are ``ceil(M/tile_m) *
ceil(N/tile_n)`` of them, spread over the cube cores in waves (block i on core
i mod cores), so the last wave may leave cores idle. Each block walks K in
steps of ``tile_k``, ``l1_k_steps`` steps per L1 stage. Tiles past a matrix
edge are padded: the cube computes the whole tile, the movers load only the
valid part (decode GEMMs with M = 1 compute a 16-row fractal for one row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Geometry:
    """Per-config block geometry; every field is an array with one entry per config."""

    tm: np.ndarray
    tk: np.ndarray
    tn: np.ndarray
    blocks_m: np.ndarray
    blocks_n: np.ndarray
    blocks: np.ndarray
    waves: np.ndarray
    active_full: np.ndarray  # cores busy in every wave but the last
    active_last: np.ndarray  # cores busy in the last wave
    k_steps: np.ndarray
    stages: np.ndarray  # L1 stages per block
    steps_per_stage: np.ndarray  # mean K steps per stage (the last stage may be short)
    rows_valid: np.ndarray  # rows of A a full block loads: min(tile_m, M)
    cols_valid: np.ndarray  # columns of B a full block loads: min(tile_n, N)


def block_geometry(
    tm: np.ndarray, tk: np.ndarray, tn: np.ndarray, m: int, k: int, n: int,
    cores: int, l1_k_steps: int,
) -> Geometry:
    """Blocks, waves and K steps of an ``m x k x n`` GEMM for each tile shape."""
    tm, tk, tn = (np.asarray(x, dtype=float) for x in (tm, tk, tn))
    blocks_m = np.ceil(m / tm)
    blocks_n = np.ceil(n / tn)
    blocks = blocks_m * blocks_n
    waves = np.ceil(blocks / cores)
    active_full = np.minimum(blocks, cores)
    active_last = blocks - (waves - 1) * cores
    k_steps = np.ceil(k / tk)
    stages = np.ceil(k_steps / l1_k_steps)
    return Geometry(
        tm=tm, tk=tk, tn=tn, blocks_m=blocks_m, blocks_n=blocks_n, blocks=blocks,
        waves=waves, active_full=active_full, active_last=active_last, k_steps=k_steps,
        stages=stages, steps_per_stage=k_steps / stages,
        rows_valid=np.minimum(tm, m), cols_valid=np.minimum(tn, n),
    )
