"""Bytes that cross HBM and L2 for the whole GEMM (shared by all cores).

Every block loads its A rows and B columns over its K; across blocks the same
panels are loaded again (``ceil(N/tile_n)`` times for A, ``ceil(M/tile_m)``
times for B). Those repeats are served by L2 when A and B fit in it; past L2
they go back to HBM, at most once per wave for the panels a wave touches.
Which panels a wave touches is the block swizzle's doing (catlass
``GemmIdentityBlockSwizzle<Offset, Direction>``): direction 0 walks groups
of ``Offset`` block rows along N, so a wave of ``P`` blocks touches
``Offset`` A panels and ``P / Offset`` B panels; direction 1 the transpose.

A wave whose panels alone overflow L2 cannot even reuse them across its own
blocks: past twice the usable L2 every load goes to HBM.

Warm L2: a GEMM timed in a loop (a benchmark) finds its operands in L2 from
the second run on when they fit; in a model's decode step every GEMM's
weights are new, so nothing is warm. ``warm`` says which.

L2 traffic is counted in access sectors: a contiguous segment of ``s`` bytes
starting at a multiple of ``gcd(s, SECTOR)`` touches on average
``(s + SECTOR - gcd) / SECTOR`` sectors, so narrow rows (tile_n = 16 on a
row-major B: 32 B per row) waste most of each access.
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.aicore.gemm.geometry import Geometry
from aoe_optuna.aicore.pipes.transfer import L2_USABLE_FRACTION

L2_SECTOR_BYTES = 128  # assumed access granularity (the reference gives a 512 B line only)


def sector_inflation(segment_bytes: np.ndarray, sector: int = L2_SECTOR_BYTES) -> np.ndarray:
    """Bytes moved per useful byte for contiguous segments of this size."""
    seg = np.maximum(np.asarray(segment_bytes, dtype=float), 1.0)
    g = np.gcd(seg.astype(np.int64), sector).astype(float)
    return (seg + sector - g) / seg


def operand_bytes_loaded(g: Geometry, m: int, k: int, n: int, elem: np.ndarray) -> tuple:
    """(A bytes, B bytes) loaded by all blocks together, valid elements only."""
    a = g.blocks_n * m * k * elem
    b = g.blocks_m * n * k * elem
    return a, b


def hbm_bytes(
    g: Geometry, m: int, k: int, n: int, elem: np.ndarray, c_bytes: np.ndarray,
    l2_bytes: float, swizzle_offset: np.ndarray, swizzle_direction: np.ndarray,
    warm: bool,
) -> np.ndarray:
    """Bytes read from and written to HBM: compulsory A, B, C plus L2 misses of repeats."""
    compulsory = (m * k + k * n) * elem
    a_loaded, b_loaded = operand_bytes_loaded(g, m, k, n, elem)
    loaded = a_loaded + b_loaded
    usable = l2_bytes * L2_USABLE_FRACTION
    fits = np.minimum(1.0, usable / compulsory)
    offset = np.maximum(np.asarray(swizzle_offset, dtype=float), 1.0)
    along_n = np.asarray(swizzle_direction) == 0
    group_m = np.where(along_n, np.minimum(g.blocks_m, offset), 0.0)
    group_n = np.where(along_n, 0.0, np.minimum(g.blocks_n, offset))
    wave_rows = np.where(along_n, group_m,
                         np.minimum(g.blocks_m, np.ceil(g.active_full / np.maximum(group_n, 1))))
    wave_cols = np.where(along_n,
                         np.minimum(g.blocks_n, np.ceil(g.active_full / np.maximum(group_m, 1))),
                         group_n)
    k_split = k / g.splits
    wave_unique = (wave_rows * g.rows_valid + wave_cols * g.cols_valid) * k_split * elem
    # a wave whose panels overflow L2 evicts them before its own blocks reuse them
    thrash = np.clip(wave_unique / usable - 1.0, 0.0, 1.0)
    reused = np.minimum(loaded, g.waves * wave_unique)
    spilled = np.maximum(compulsory, reused + thrash * (loaded - reused))
    reads = fits * compulsory + (1.0 - fits) * spilled
    if warm:  # what stays in L2 from the previous run is not read from HBM again
        resident = np.minimum(1.0, usable / (compulsory + c_bytes))
        reads = reads - resident * compulsory
    return reads + c_bytes


def l2_bytes_moved(
    a_loaded: np.ndarray, b_loaded: np.ndarray, a_row_bytes: np.ndarray,
    b_row_bytes: np.ndarray, c_bytes: np.ndarray,
) -> np.ndarray:
    """Sector-granular L2 traffic of all loads (given each operand's contiguous run) and C."""
    return (a_loaded * sector_inflation(a_row_bytes) + b_loaded * sector_inflation(b_row_bytes)
            + c_bytes)
