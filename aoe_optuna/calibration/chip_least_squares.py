"""The robust least-squares fit of a GEMM scale and a launch overhead to measured kernels.

Each kernel's residual is ``log(predicted / measured)`` with ``predicted =
scale * model + launch``; the loss is ``soft_l1`` with its knee at
:data:`ROBUST_SCALE` (quadratic to 5%, linear beyond), so one odd kernel moves
the fit a little, not as its square. The parameters are ``(log scale,
launch_us)``. Besides the fit, this module gives what the leave-one-out needs
of the same loss: each kernel's residual, its Jacobian row, and the loss's
first and second derivative at the fit.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

ROBUST_SCALE = 0.05  # soft_l1's knee, in log time


def predicted(model: np.ndarray, scale: float, launch_us: float) -> np.ndarray:
    return scale * model + launch_us


def residuals(model: np.ndarray, measured: np.ndarray, scale: float,
              launch_us: float) -> np.ndarray:
    return np.log(np.maximum(predicted(model, scale, launch_us), 1e-3) / measured)


def fit(model: np.ndarray, measured: np.ndarray, launch: bool) -> tuple[float, float]:
    """(scale, launch_us) minimising the robust loss of log(predicted / measured)."""
    def residual(x: np.ndarray) -> np.ndarray:
        return residuals(model, measured, float(np.exp(x[0])), x[1] if launch else 0.0)

    low, high = np.array([np.log(0.05), -0.5 * float(model.min())]), np.array([np.log(20), 1e3])
    start = np.clip([float(np.median(np.log(measured / model))), 0.0], low + 1e-9, high - 1e-9)
    result = least_squares(residual, start, bounds=(low, high), loss="soft_l1",
                           f_scale=ROBUST_SCALE)
    return float(np.exp(result.x[0])), float(result.x[1]) if launch else 0.0


def jacobian(model: np.ndarray, scale: float, launch_us: float, launch: bool) -> np.ndarray:
    """d residual / d (log scale[, launch_us]) of each kernel: one row per kernel."""
    at = np.maximum(predicted(model, scale, launch_us), 1e-3)
    if not launch:
        return (scale * model / at)[:, None]
    return np.stack([scale * model / at, 1.0 / at], axis=1)


def loss_slopes(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The soft_l1 loss's first and second derivative in the residual, ``(psi, rho2)``:
    the loss of ``r`` is ``f^2 (sqrt(1 + (r/f)^2) - 1)``, so ``psi = r / sqrt(1 + z)``
    and ``rho2 = (1 + z)^-1.5`` with ``z = (r/f)^2``."""
    z = (r / ROBUST_SCALE) ** 2
    return r / np.sqrt(1.0 + z), (1.0 + z) ** -1.5
