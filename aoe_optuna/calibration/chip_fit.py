"""Fit a chip's GEMM efficiency scale and launch overhead to its measured kernels.

The simulator keeps its model; a chip is calibrated by at most two numbers:
a scale on every GEMM time (clock, bandwidth and efficiency a part's
silicon differs by) and one launch overhead added to each kernel (a
driver's, a host's). Two numbers fit the chip, not the table: a kernel that
misses for its own reason cannot pull a per-kernel constant. The loss is
robust (``soft_l1`` on log time, quadratic up to 5%, linear beyond), so
one odd kernel moves the fit a little, not as its square. The overhead is
considered only with :data:`LAUNCH_FROM` kernels or more whose model times
span at least twice the shortest (otherwise a launch term and a scale
cannot be told apart), and kept only where the leave-one-out error says it
predicts held-out kernels better than the scale alone; otherwise it is 0.

The points are distinct kernels (:mod:`.kernels`: a kernel timed more than
once is one figure), each weighing the same. Errors are reported three ways on the
same kernels: in sample (fitted to all), leave-one-out (each kernel predicted
by a fit to the others, :mod:`.leave_one_kernel_out`: what a new kernel can
expect) and the shipped profile's (no calibration). A fit whose leave-one-out
error is worse than the shipped profile's is refused. The loss and the fit
are :mod:`.chip_least_squares`; the model's times :mod:`.model_times`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aoe_optuna.calibration.bands import QUANTILE, QUANTILE_FROM
from aoe_optuna.calibration.chip_least_squares import fit
from aoe_optuna.calibration.leave_one_kernel_out import held_out_us
from aoe_optuna.hardware.chip_calibration import ChipCalibration

MIN_KERNELS = 3  # leave-one-out needs two kernels to fit and one to predict
LAUNCH_FROM = 6




def fits_launch(model: np.ndarray) -> bool:
    return len(model) >= LAUNCH_FROM and float(model.max()) >= 2.0 * float(model.min())


@dataclass(frozen=True)
class Errors:
    """|predicted / measured - 1| over kernels: the median and the high mark (as the
    bands)."""

    median: float
    high: float
    high_is: str
    kernels: int

    def document(self) -> dict[str, Any]:
        return {"median": round(self.median, 4), "high": round(self.high, 4),
                "high_is": self.high_is, "kernels": self.kernels}

    def text(self) -> str:
        return f"median {self.median:.1%}, {self.high_is} {self.high:.1%}"


def errors(predicted: np.ndarray, measured: np.ndarray) -> Errors:
    err = np.abs(predicted / measured - 1.0)
    if len(err) >= QUANTILE_FROM:
        return Errors(float(np.median(err)), float(np.quantile(err, QUANTILE)),
                      f"{round(QUANTILE * 100)}th percentile", len(err))
    return Errors(float(np.median(err)), float(np.max(err)), "largest", len(err))


@dataclass(frozen=True)
class ChipFit:
    scale: float
    launch_us: float
    in_sample: Errors
    leave_one_out: Errors
    shipped: Errors
    loo_predicted_us: tuple[float, ...]

    def calibration(self, base: str, report: dict[str, Any]) -> ChipCalibration:
        return ChipCalibration(base, {"gemm": round(self.scale, 5)}, round(self.launch_us, 4),
                               {"in_sample": self.in_sample.document(),
                                "leave_one_out": self.leave_one_out.document(),
                                "shipped_profile": self.shipped.document(), **report})


def fit_chip(model: np.ndarray, measured: np.ndarray) -> ChipFit:
    """The fit to every kernel, and each kernel predicted by a fit to the others; with
    the launch overhead only where that predicts the held-out kernels better than the
    scale alone (a second number must earn its place on kernels it did not see)."""
    if len(model) < MIN_KERNELS:
        raise ValueError(f"timings: expected at least {MIN_KERNELS} distinct kernels "
                         f"(leave-one-out needs them), got {len(model)}")
    best = _fit_chip(model, measured, launch=False)
    if fits_launch(model):
        with_launch = _fit_chip(model, measured, launch=True)
        if with_launch.leave_one_out.median < best.leave_one_out.median:
            best = with_launch
    return best


def _fit_chip(model: np.ndarray, measured: np.ndarray, launch: bool) -> ChipFit:
    scale, launch_us = fit(model, measured, launch)
    loo = held_out_us(model, measured, launch, scale, launch_us)
    return ChipFit(scale, launch_us, errors(scale * model + launch_us, measured),
                   errors(loo, measured), errors(model, measured), tuple(loo))


def refusal(chip: ChipFit) -> str | None:
    """Why ``chip`` must not be written (its held-out kernels fit worse than shipped), or
    None."""
    if chip.leave_one_out.median <= chip.shipped.median:
        return None
    return (f"calibration refused: its leave-one-out median error {chip.leave_one_out.median:.1%}"
            f" is worse than the shipped profile's {chip.shipped.median:.1%} on the same "
            f"{chip.shipped.kernels} kernels; nothing written")
