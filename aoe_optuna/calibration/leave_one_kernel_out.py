"""Each kernel predicted by a fit to the other kernels: what a kernel the fit never saw
can expect.

Refitting once per kernel costs the kernels squared: 500 kernels took 1,000
fits (10 s) and 200,000 rows never finished. Up to :data:`REFIT_UP_TO` kernels
each is refitted, which is exact and cheap. Beyond, each kernel's held-out
prediction is one Newton step from the fit to all (the approximate
leave-one-out of an M-estimator): leaving kernel ``i`` out moves the
parameters by ``H_-i^-1 J_i psi_i``, with ``H = sum rho2_j J_j J_j^T`` the
Gauss-Newton Hessian of the robust loss (:mod:`.chip_least_squares`), so by
Sherman-Morrison its residual becomes ``r_i + psi_i a_i / (1 - rho2_i a_i)``
where ``a_i = J_i^T H^-1 J_i``: one pass, linear in the kernels. For plain
least squares (``psi = r``, ``rho2 = 1``) that is the hat-matrix identity
``r_i / (1 - h_ii)``, exact; with the soft-l1 loss it agrees with refitting to
within a few hundredths of a point of error on hundreds of kernels
(``tests/calibration/test_leave_one_kernel_out.py``).
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.calibration.chip_least_squares import fit, jacobian, loss_slopes, residuals

REFIT_UP_TO = 100  # kernels refitted one by one (about 10 ms a fit)


def held_out_us(model: np.ndarray, measured: np.ndarray, launch: bool,
                scale: float, launch_us: float) -> np.ndarray:
    """Each kernel's time as predicted by a fit to the others (``scale``, ``launch_us``:
    the fit to all of them, with or without the launch overhead)."""
    if len(model) <= REFIT_UP_TO:
        return refitted_us(model, measured, launch)
    return newton_step_us(model, measured, launch, scale, launch_us)


def refitted_us(model: np.ndarray, measured: np.ndarray, launch: bool) -> np.ndarray:
    """Each kernel predicted by its own fit to the others (exact; one fit per kernel)."""
    out = np.empty(len(model))
    for i in range(len(model)):
        keep = np.arange(len(model)) != i
        s, d = fit(model[keep], measured[keep], launch)
        out[i] = s * model[i] + d
    return out


def newton_step_us(model: np.ndarray, measured: np.ndarray, launch: bool,
                   scale: float, launch_us: float) -> np.ndarray:
    """Each kernel predicted by one Newton step of the fit without it, from the fit to
    all (the module's docstring derives it); linear in the kernels."""
    r = residuals(model, measured, scale, launch_us)
    psi, rho2 = loss_slopes(r)
    jac = jacobian(model, scale, launch_us, launch)
    hessian = (jac * rho2[:, None]).T @ jac
    leverage = np.einsum("ij,jk,ik->i", jac, np.linalg.pinv(hessian), jac)
    held_out = r + psi * leverage / np.maximum(1.0 - rho2 * leverage, 1e-12)
    return measured * np.exp(held_out)
