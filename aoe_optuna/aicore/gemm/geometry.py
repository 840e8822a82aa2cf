"""How a GEMM is cut into blocks, L1 tiles, K steps and waves of cores (no timing here).

Output blocks are ``tile_m x tile_n``; there are ``ceil(M/tile_m) *
ceil(N/tile_n)`` of them, times ``split_k`` when K is split across cores
(catlass SplitkMatmul: each split walks its share of the L1 tiles of K).
Blocks are spread over the cube cores in waves, so the last wave may leave
cores idle. Each block walks its K in L1 tiles of ``l1 K`` (``tile_k`` steps
each). Edge tiles: the movers load only the valid rows and columns, and the
cube computes the valid rows rounded up to its 16-row fractal (a decode row
costs a 16-row MMAD, not a whole ``tile_m`` one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRACTAL = 16


@dataclass(frozen=True)
class Geometry:
    """Per-config block geometry; every field is an array with one entry per config."""

    tm: np.ndarray
    tk: np.ndarray
    tn: np.ndarray
    l1_k: np.ndarray  # K of one L1 tile
    splits: np.ndarray  # K splits actually used (split_k capped by the L1 tiles of K)
    blocks_m: np.ndarray
    blocks_n: np.ndarray
    blocks: np.ndarray  # all blocks, splits included
    waves: np.ndarray
    active_full: np.ndarray  # cores busy in every wave but the last
    active_last: np.ndarray  # cores busy in the last wave
    l1_tiles: np.ndarray  # L1 tiles one block walks
    steps_per_tile: np.ndarray  # K steps (L0 tiles) per L1 tile
    k_steps: np.ndarray  # K steps one block walks
    rows_valid: np.ndarray  # rows of A a full block loads: min(tile_m, M)
    cols_valid: np.ndarray  # columns of B a full block loads: min(tile_n, N)
    rows_cube: np.ndarray  # rows the cube computes: rows_valid rounded up to 16
    cols_cube: np.ndarray  # columns the cube computes: cols_valid rounded up to 16
    depth_valid: np.ndarray  # K elements of one L1 tile that hold data (short last tile)


def block_geometry(
    tm: np.ndarray, tk: np.ndarray, tn: np.ndarray, l1_k: np.ndarray, split_k: np.ndarray,
    m: int, k: int, n: int, cores: int,
) -> Geometry:
    """Blocks, waves and K steps of an ``m x k x n`` GEMM for each tiling."""
    tm, tk, tn, l1_k = (np.asarray(x, dtype=float) for x in (tm, tk, tn, l1_k))
    k_tiles = np.ceil(k / l1_k)
    splits = np.clip(np.asarray(split_k, dtype=float), 1.0, k_tiles)
    l1_tiles = np.ceil(k_tiles / splits)
    blocks_m = np.ceil(m / tm)
    blocks_n = np.ceil(n / tn)
    blocks = blocks_m * blocks_n * splits
    waves = np.ceil(blocks / cores)
    active_full = np.minimum(blocks, cores)
    active_last = blocks - (waves - 1) * cores
    depth_valid = np.minimum(l1_k, k / (k_tiles))  # mean K per L1 tile
    steps_per_tile = np.ceil(depth_valid / tk)
    rows_valid = np.minimum(tm, m)
    cols_valid = np.minimum(tn, n)
    return Geometry(
        tm=tm, tk=tk, tn=tn, l1_k=l1_k, splits=splits, blocks_m=blocks_m, blocks_n=blocks_n,
        blocks=blocks, waves=waves, active_full=active_full, active_last=active_last,
        l1_tiles=l1_tiles, steps_per_tile=steps_per_tile, k_steps=l1_tiles * steps_per_tile,
        rows_valid=rows_valid, cols_valid=cols_valid,
        rows_cube=np.ceil(rows_valid / FRACTAL) * FRACTAL,
        cols_cube=np.ceil(cols_valid / FRACTAL) * FRACTAL,
        depth_valid=depth_valid,
    )
