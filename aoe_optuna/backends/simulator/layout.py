"""How each GM layout shapes the loads of A and B: contiguous run length and nd2nz.

``row_major``: A is [M, K], B is [K, N] (ND, converted to NZ on load).
``col_major``: A is stored [K, M], B is [N, K] (ND transposed; the usual
weight layout of a Linear layer), also converted on load.
``z_major``: both already in the fractal layout the cube reads (NZ): no
conversion, and each 16-row (or 16-column) panel is contiguous along K.
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.space.params import LAYOUTS

ROW_MAJOR, COL_MAJOR, Z_MAJOR = (LAYOUTS.index(x) for x in ("row_major", "col_major", "z_major"))
PANEL = 16  # rows (A) or columns (B) of one fractal panel


def contiguous_runs(
    layout: np.ndarray, rows: np.ndarray, cols: np.ndarray, stage_k: np.ndarray, elem: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Bytes per contiguous run of the A and B loads of one L1 stage.

    ``rows``/``cols``: valid rows of A and columns of B a block loads;
    ``stage_k``: the K extent of one L1 stage.
    """
    panel = PANEL * stage_k * elem
    a_run = np.select(
        [layout == ROW_MAJOR, layout == COL_MAJOR], [stage_k * elem, rows * elem], panel
    )
    b_run = np.select(
        [layout == ROW_MAJOR, layout == COL_MAJOR], [cols * elem, stage_k * elem], panel
    )
    return a_run, b_run


def converts_on_load(layout: np.ndarray) -> np.ndarray:
    """ND layouts pay the nd2nz conversion in the GM->L1 mover; z_major does not."""
    return layout != Z_MAJOR
