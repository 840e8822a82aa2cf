"""How each operand's GM layout shapes its loads: contiguous runs and strides.

Each operand has a layout of its own (catlass ``layout::RowMajor``,
``ColumnMajor``, ``zN``), from ``layout_a`` / ``layout_b``; at their default
the older ``layout`` parameter decides for both (``row_major``, ``col_major``
or ``z_major`` = zN), so specs written for it keep their meaning.

* A row-major ``[M, K]``: a tile row is ``k`` contiguous elements, rows ``K``
  apart; column-major (stored ``[K, M]``): runs of ``m`` elements, ``M`` apart.
* B row-major ``[K, N]``: runs of ``n`` elements, ``N`` apart; column-major
  (stored ``[N, K]``, the usual Linear weight): runs of ``k``, ``K`` apart.
* zN: already the fractal layout the cube reads; a 16-row (A) or 16-column
  (B) panel is contiguous along K, no conversion on load.

ND sources are converted to the fractal layout by the GM->L1 mover (nd2nz),
whose speed depends on the contiguous run and on whether the rows sit on
512 B boundaries (see :mod:`aoe_optuna.aicore.pipes.transfer`); a zN panel is one
long run.
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.space.params import LAYOUTS, OPERAND_LAYOUTS

ROW, COL, ZN = range(3)  # operand layout codes, OPERAND_LAYOUTS order
PANEL = 16  # rows (A) or columns (B) of one fractal panel
# legacy ``layout`` code -> operand layout code (z_major is zN for both operands)
_FROM_LEGACY = np.array([OPERAND_LAYOUTS.index(x) for x in ("row_major", "col_major", "zN")])
assert LAYOUTS == ("row_major", "col_major", "z_major")


def operand_layouts(
    legacy: np.ndarray, layout_a: np.ndarray, layout_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Layout code of A and of B per config: the operand's own unless at its default."""
    old = _FROM_LEGACY[np.asarray(legacy, dtype=np.int64)]
    a = np.where(layout_a != ROW, layout_a, old)
    b = np.where(layout_b != ROW, layout_b, old)
    return a, b


def runs_and_strides(
    a_layout: np.ndarray, b_layout: np.ndarray, rows: np.ndarray, cols: np.ndarray,
    depth: np.ndarray, m: int, k: int, n: int, elem: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A run, A stride, B run, B stride) in bytes for one L1 tile of each operand.

    ``rows``/``cols``: valid rows of A and columns of B a block loads;
    ``depth``: the K extent of one L1 tile. zN runs are whole panels.
    """
    a_run = np.select([a_layout == ROW, a_layout == COL], [depth * elem, rows * elem],
                      PANEL * depth * elem)
    a_stride = np.select([a_layout == ROW, a_layout == COL], [k * elem, m * elem],
                         PANEL * k * elem)
    b_run = np.select([b_layout == ROW, b_layout == COL], [cols * elem, depth * elem],
                      PANEL * depth * elem)
    b_stride = np.select([b_layout == ROW, b_layout == COL], [n * elem, k * elem],
                         PANEL * k * elem)
    return a_run, a_stride, b_run, b_stride
