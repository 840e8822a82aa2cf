"""Bytes that cross HBM and L2 for the whole GEMM (shared by all cores).

Every block loads its A rows and B columns over the whole K; across blocks
the same panels are loaded again (``ceil(N/tile_n)`` times for A,
``ceil(M/tile_m)`` times for B). Those repeats are served by L2 when A and B
fit in it; past L2 they go back to HBM, at most once per wave for the
panels a wave touches (blocks walk in groups of ``SWIZZLE_ROWS`` block rows,
as catlass's GemmIdentityBlockSwizzle<3, 0> does).

L2 traffic is counted in access sectors: a contiguous segment of ``s`` bytes
starting at a multiple of ``gcd(s, SECTOR)`` touches on average
``(s + SECTOR - gcd) / SECTOR`` sectors, so narrow rows (tile_n = 16 on a
row-major B: 32 B per row) waste most of each access.
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.backends.simulator.geometry import Geometry

L2_USABLE_FRACTION = 0.75  # assumed: set conflicts and other tenants keep L2 from full use
SWIZZLE_ROWS = 3  # catlass GemmIdentityBlockSwizzle<3, 0> (reference: catlass section)
L2_SECTOR_BYTES = 128  # assumed access granularity (the reference gives a 512 B line only)
LINE_BYTES = 512  # L2 cache line (reference: alignment section)


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
    g: Geometry, m: int, k: int, n: int, elem: np.ndarray, c_bytes: np.ndarray, l2_bytes: float
) -> np.ndarray:
    """Bytes read from and written to HBM: compulsory A, B, C plus L2 misses of repeats."""
    compulsory = (m * k + k * n) * elem
    a_loaded, b_loaded = operand_bytes_loaded(g, m, k, n, elem)
    loaded = a_loaded + b_loaded
    fits = np.minimum(1.0, l2_bytes * L2_USABLE_FRACTION / compulsory)
    wave_rows = np.minimum(g.blocks_m, SWIZZLE_ROWS)
    wave_cols = np.minimum(g.blocks_n, np.ceil(g.active_full / wave_rows))
    wave_unique = (wave_rows * g.rows_valid + wave_cols * g.cols_valid) * k * elem
    spilled = np.maximum(compulsory, np.minimum(loaded, g.waves * wave_unique))
    return fits * compulsory + (1.0 - fits) * spilled + c_bytes


def l2_bytes_moved(
    a_loaded: np.ndarray, b_loaded: np.ndarray, a_row_bytes: np.ndarray,
    b_row_bytes: np.ndarray, c_bytes: np.ndarray,
) -> np.ndarray:
    """Sector-granular L2 traffic of all loads (given each operand's contiguous run) and C."""
    return (a_loaded * sector_inflation(a_row_bytes) + b_loaded * sector_inflation(b_row_bytes)
            + c_bytes)
