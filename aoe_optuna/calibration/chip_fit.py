"""Fit a chip's GEMM efficiency scale and launch overhead to its measured kernels.

The simulator keeps its model; a chip is calibrated by at most two numbers:
a scale on every GEMM time (clock, bandwidth and efficiency a part's
silicon differs by) and one launch overhead added to each kernel (a
driver's, a host's). Two numbers fit the chip, not the table: a row that
misses for its own reason cannot pull a per-row constant. The loss is
robust (``soft_l1`` on log time, quadratic up to 5%, linear beyond), so
one odd kernel moves the fit a little, not as its square. The overhead is
considered only with :data:`LAUNCH_FROM` rows or more whose model times
span at least twice the shortest (otherwise a launch term and a scale
cannot be told apart), and kept only where the leave-one-out error says it
predicts held-out rows better than the scale alone; otherwise it is 0.

Errors are reported three ways on the same rows: in sample (fitted to
all), leave-one-out (each row predicted by a fit to the others: what a new
kernel can expect) and the shipped profile's (no calibration). A fit whose
leave-one-out error is worse than the shipped profile's is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from aoe_optuna.aicore.gemm.model import GemmModel
from aoe_optuna.calibration.bands import QUANTILE, QUANTILE_FROM
from aoe_optuna.calibration.residuals import library_space
from aoe_optuna.calibration.timings import TimedKernel
from aoe_optuna.hardware.chip_calibration import ChipCalibration
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.params import to_code
from aoe_optuna.workload.files import WorkloadFileError

MIN_ROWS = 3  # leave-one-out needs two rows to fit and one to predict
LAUNCH_FROM = 6
ROBUST_SCALE = 0.05  # soft_l1's knee, in log time


class CalibrationRefused(ValueError):
    """A fit that does not beat the shipped profile on its own held-out rows."""


def model_us(rows: Sequence[TimedKernel], profile: SocProfile) -> np.ndarray:
    """The uncalibrated simulator's time of each row; an infeasible tiling names its row."""
    base = replace(profile, calibration=None)
    sim = GemmModel(base)
    out = np.empty(len(rows))
    for i, row in enumerate(rows):
        if row.tiling is None:
            space = library_space(base.soc, row.gemm.dtype)
            feasible = space.all_feasible()
            out[i] = float(np.nanmin(sim.latency(space.columns(feasible), row.gemm))) * 1e6
            continue
        cols = {k: np.array([to_code(k, v)]) for k, v in row.tiling.items()}
        seconds = float(sim.latency(cols, row.gemm)[0])
        if not np.isfinite(seconds):
            raise WorkloadFileError(row.source, row.where.split(": ", 1)[-1] + ", column 'tiling'",
                                    f"a tiling the {base.soc}'s hardware rules allow for "
                                    f"{row.gemm.M}x{row.gemm.N}x{row.gemm.K} {row.gemm.dtype}",
                                    "one that breaks them")
        out[i] = seconds * 1e6
    return out


def fits_launch(model: np.ndarray) -> bool:
    return len(model) >= LAUNCH_FROM and float(model.max()) >= 2.0 * float(model.min())


def fit(model: np.ndarray, measured: np.ndarray, launch: bool) -> tuple[float, float]:
    """(scale, launch_us) minimising the robust loss of log(predicted / measured)."""
    def residual(x: np.ndarray) -> np.ndarray:
        predicted = np.exp(x[0]) * model + (x[1] if launch else 0.0)
        return np.log(np.maximum(predicted, 1e-3) / measured)

    low, high = np.array([np.log(0.05), -0.5 * float(model.min())]), np.array([np.log(20), 1e3])
    start = np.clip([float(np.median(np.log(measured / model))), 0.0], low + 1e-9, high - 1e-9)
    result = least_squares(residual, start, bounds=(low, high), loss="soft_l1",
                           f_scale=ROBUST_SCALE)
    return float(np.exp(result.x[0])), float(result.x[1]) if launch else 0.0


@dataclass(frozen=True)
class Errors:
    """|predicted / measured - 1| over rows: the median and the high mark (as the bands)."""

    median: float
    high: float
    high_is: str
    rows: int

    def document(self) -> dict[str, Any]:
        return {"median": round(self.median, 4), "high": round(self.high, 4),
                "high_is": self.high_is, "rows": self.rows}

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
    """The fit to every row, and each row predicted by a fit to the others; with the
    launch overhead only where that predicts the held-out rows better than the scale
    alone (a second number must earn its place on rows it did not see)."""
    if len(model) < MIN_ROWS:
        raise ValueError(f"timings: expected at least {MIN_ROWS} kernels (leave-one-out "
                         f"needs them), got {len(model)}")
    best = _fit_chip(model, measured, launch=False)
    if fits_launch(model):
        with_launch = _fit_chip(model, measured, launch=True)
        if with_launch.leave_one_out.median < best.leave_one_out.median:
            best = with_launch
    return best


def _fit_chip(model: np.ndarray, measured: np.ndarray, launch: bool) -> ChipFit:
    scale, launch_us = fit(model, measured, launch)
    loo = np.empty(len(model))
    for i in range(len(model)):
        keep = np.arange(len(model)) != i
        s, d = fit(model[keep], measured[keep], launch)
        loo[i] = s * model[i] + d
    return ChipFit(scale, launch_us, errors(scale * model + launch_us, measured),
                   errors(loo, measured), errors(model, measured), tuple(loo))


def refusal(chip: ChipFit) -> str | None:
    """Why ``chip`` must not be written (its held-out rows fit worse than shipped), or None."""
    if chip.leave_one_out.median <= chip.shipped.median:
        return None
    return (f"calibration refused: its leave-one-out median error {chip.leave_one_out.median:.1%}"
            f" is worse than the shipped profile's {chip.shipped.median:.1%} on the same "
            f"{chip.shipped.rows} kernels; nothing written")
