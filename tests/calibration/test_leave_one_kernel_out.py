"""The leave-one-out of a calibration: refits for a few kernels, one Newton step from the
fit to all beyond (linear in the kernels), the two agreeing; and the whole fit's time
does not grow with the kernels squared."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.calibration import chip_least_squares, leave_one_kernel_out
from aoe_optuna.calibration.chip_fit import fit_chip
from aoe_optuna.calibration.chip_least_squares import fit
from aoe_optuna.calibration.leave_one_kernel_out import (
    REFIT_UP_TO,
    newton_step_us,
    refitted_us,
)


def _kernels(n: int, launch: bool, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Model times over three decades, and a chip 10% slower (plus 4 us per launch) with
    log-normal noise and three odd kernels 60% slower."""
    rng = np.random.default_rng(seed)
    model = np.exp(rng.uniform(np.log(5.0), np.log(2000.0), n))
    measured = (1.1 * model + (4.0 if launch else 0.0)) * np.exp(rng.normal(0, noise, n))
    measured[:3] *= 1.6
    return model, measured


def test_near_least_squares_the_newton_step_is_the_refit() -> None:
    # residuals far inside the loss's quadratic part: the hat-matrix identity holds
    model, measured = _kernels(20, launch=False, noise=1e-4)
    measured[:3] /= 1.6
    scale, _ = fit(model, measured, launch=False)
    step = newton_step_us(model, measured, False, scale, 0.0)
    assert step == pytest.approx(refitted_us(model, measured, launch=False), rel=1e-6)


@pytest.mark.slow  # 2 x 101 robust refits, about 3 s
@pytest.mark.parametrize("launch", [False, True])
def test_beyond_the_refits_the_newton_step_agrees_with_refitting(launch: bool) -> None:
    model, measured = _kernels(REFIT_UP_TO + 1, launch, noise=0.08)
    scale, launch_us = fit(model, measured, launch)
    exact = np.abs(refitted_us(model, measured, launch) / measured - 1)
    step = np.abs(newton_step_us(model, measured, launch, scale, launch_us) / measured - 1)
    assert np.median(step) == pytest.approx(np.median(exact), abs=1e-3)
    assert np.max(np.abs(step - exact)) < 2e-3  # each kernel's error, within 0.2 points


def test_many_kernels_cost_a_few_fits_not_one_per_kernel(monkeypatch) -> None:
    calls = []
    real = chip_least_squares.fit

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(leave_one_kernel_out, "fit", counted)
    monkeypatch.setattr("aoe_optuna.calibration.chip_fit.fit", counted)
    model, measured = _kernels(20_000, launch=True, noise=0.05)
    chip = fit_chip(model, measured)
    assert len(calls) == 2  # the fit to all, with and without the launch overhead
    assert chip.scale == pytest.approx(1.1, rel=0.02) and chip.leave_one_out.kernels == 20_000
    assert chip.in_sample.median <= chip.leave_one_out.median < 0.05
