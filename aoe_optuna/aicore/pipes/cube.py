"""MMAD timing: the cube's fractal count plus a fixed per-instruction cost.

One ``Mmad(m, k, n)`` issues ``ceil(m/16) * ceil(k/C0) * ceil(n/16)`` fractal
operations, one per cycle at peak, and pays a start-up of ``c`` cycles. That
two-parameter line fits msKPP's single-core measurements (median residual
under 3%; the worst, 16%, is the smallest 910B1 MMAD), and it is what makes short K
runs and thin tiles waste the cube: efficiency = F / (F + c).

The two tables disagree on ``c`` (about 2 cycles on a 910B1, about 23 on a
910B3); each SoC uses the table taken on its own die family (B1/B2 share one,
B3/B4 the other), and ``mmad_startup_cycles`` overrides it.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from aoe_optuna.hardware import measured_core

FRACTAL = 16  # rows of A / columns of B per cube fractal (all dtypes)


def fractals(m: np.ndarray, k: np.ndarray, n: np.ndarray, c0: np.ndarray) -> np.ndarray:
    """Fractal operations of one MMAD; K advances by C0 elements per fractal."""
    return np.ceil(m / FRACTAL) * np.ceil(k / c0) * np.ceil(n / FRACTAL)


@cache
def fit_mmad(table: str) -> tuple[float, float]:
    """Least-squares ``cycles = slope * F + startup`` to one msKPP MMAD table (fp16)."""
    rows = np.array(getattr(measured_core, table), dtype=float)
    m, k, n, ops_per_cycle = rows.T
    cycles = 2.0 * m * k * n / ops_per_cycle
    f = fractals(m, k, n, np.full_like(k, 16.0))
    slope, startup = np.polyfit(f, cycles, 1)
    return float(slope), float(startup)


# SoC -> the table measured on its die family.
MMAD_TABLE_FOR_SOC = {
    "Ascend910B1": "MMAD_910B1",
    "Ascend910B2": "MMAD_910B1",
    "Ascend910B3": "MMAD_910B3",
    "Ascend910B4": "MMAD_910B3",
}
DEFAULT_MMAD_TABLE = "MMAD_910B1"


def mmad_startup_cycles(soc: str) -> float:
    """Fitted per-MMAD start-up cycles for ``soc`` (unknown SoCs use the 910B1 fit)."""
    return fit_mmad(MMAD_TABLE_FOR_SOC.get(soc, DEFAULT_MMAD_TABLE))[1]


def mmad_cycles(
    m: np.ndarray, k: np.ndarray, n: np.ndarray, c0: np.ndarray, startup: float
) -> np.ndarray:
    """Cycles of one MMAD of an (m x k) by (k x n) block, padding to fractals included."""
    return fractals(m, k, n, c0) + startup
