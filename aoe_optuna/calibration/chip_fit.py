"""Fit a chip's efficiency scale and launch overhead to its measured kernels, per family.

The simulator keeps its model; a chip is calibrated, for each kernel family
(:mod:`.families`: a GEMM template and dispatch policy, the library's GEMM, an
attention or vector kernel), by at most two numbers: a scale on that family's
times (clock, bandwidth and efficiency a part's silicon differs by, as that
family's pipeline meets them) and one launch overhead added to each of its
kernels (a driver's, a host's). One pair cannot serve two templates whose
pipelines differ (given half of a source's timings of two catlass families at
once, the other half read 31% off; of one family, 9%), so :func:`fit_families`
fits each family from its own kernels and refuses a family with fewer than
:data:`MIN_KERNELS`. Two numbers a family fit the chip, not the table: a kernel
that misses for its own reason cannot pull a per-kernel constant. The loss is
robust (``soft_l1`` on log time, quadratic up to 5%, linear beyond), so
one odd kernel moves the fit a little, not as its square. The overhead is
considered only with :data:`LAUNCH_FROM` kernels or more whose model times
span at least twice the shortest (otherwise a launch term and a scale
cannot be told apart), and kept only where its leave-one-out band is narrower
than the scale alone's; otherwise it is 0.

The points are distinct kernels (:mod:`.kernels`: a kernel timed more than
once is one figure), each weighing the same. Errors are reported three ways on the
same kernels: in sample (fitted to all, the kernels' own errors), leave-one-out
(each kernel predicted by a fit to the others, :mod:`.leave_one_kernel_out`) and
the shipped profile's (no calibration); the last two as what a new kernel of the
family can expect: the median and 80th percentile of a Student t on the kernels'
log errors, their variance pooled with the shipped model's within-source spread
(:func:`predictive_errors`, :mod:`.spread_prior`), wide when the kernels are few.
Of the shipped constants, a scale alone and a scale with the overhead, the fewest
that state the narrowest band for a new kernel are kept: a family whose
leave-one-out band is no narrower than the shipped profile's keeps the shipped
constants (it is refused). The loss and the fit are :mod:`.chip_least_squares`;
the model's times :mod:`.model_times`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import stdtrit

from aoe_optuna.calibration.bands import QUANTILE, QUANTILE_FROM
from aoe_optuna.calibration.chip_least_squares import fit
from aoe_optuna.calibration.families import FAMILIES
from aoe_optuna.calibration.leave_one_kernel_out import held_out_us
from aoe_optuna.calibration.source_spread import SourceSpread, abs_error_quantile
from aoe_optuna.calibration.spread_prior import pooled_variance
from aoe_optuna.hardware.chip_calibration import ChipCalibration, FamilyConstants

MIN_KERNELS = 3  # leave-one-out needs two kernels to fit and one to predict
# a fitted overhead on 7 SwiGLU kernels put the other 7 up to 76% off, the scale
# alone 15% median (scripts/calibration_splits.py)
LAUNCH_FROM = 10
NEW_KERNEL = f"{round(QUANTILE * 100)}th percentile of a new kernel"


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


def predictive_errors(predicted: np.ndarray, measured: np.ndarray) -> Errors:
    """Where a new kernel of the family may land, from these kernels' log errors: the
    median and the 80th percentile of its |error| under a Student t about their mean,
    its variance theirs pooled with the within-source spread of the shipped model's
    held-out figures (:mod:`.spread_prior`, worth a few kernels), so that three kernels
    that happen to agree still state a wide band and thirty state their own."""
    y = np.log(predicted / measured)
    variance, df = pooled_variance(float(np.sum((y - y.mean()) ** 2)), len(y) - 1)
    fit = SourceSpread(float(y.mean()), variance, 0.0, variance / len(y), df, len(y), len(y))
    # never narrower than the kernels' own errors: a t on their variance understates a
    # family whose misses bunch into groups (a dtype's rows one way, another's the other)
    own = errors(predicted, measured)
    return Errors(max(abs_error_quantile(fit, 0.5), own.median),
                  max(abs_error_quantile(fit, QUANTILE), own.high), NEW_KERNEL, len(y))


def errors(predicted: np.ndarray, measured: np.ndarray) -> Errors:
    """The kernels' own |error|s: the median and the 80th percentile (the largest
    below ten kernels)."""
    err = np.abs(predicted / measured - 1.0)
    if len(err) >= QUANTILE_FROM:
        return Errors(float(np.median(err)), float(np.quantile(err, QUANTILE)),
                      f"{round(QUANTILE * 100)}th percentile", len(err))
    return Errors(float(np.median(err)), float(np.max(err)), "largest", len(err))


@dataclass(frozen=True)
class Offset:
    """The shipped model's mean log error on a family's kernels and whether the band's
    own two-sided interval (80%) of it excludes zero."""

    mean: float
    clear: bool


def shipped_offset(model: np.ndarray, measured: np.ndarray) -> Offset:
    """Whether the kernels show the shipped model off by one factor beyond what their
    scatter (pooled with the within-source prior) makes of a mean of so few: a scale
    is a free constant, and on three kernels that scatter by 20% a mean 10% off is
    noise, not the chip."""
    y = np.log(model / measured)
    variance, df = pooled_variance(float(np.sum((y - y.mean()) ** 2)), len(y) - 1)
    t = abs(float(y.mean())) / math.sqrt(variance / len(y))
    return Offset(float(y.mean()), t > float(stdtrit(df, 0.5 + QUANTILE / 2)))


@dataclass(frozen=True)
class ChipFit:
    scale: float
    launch_us: float
    in_sample: Errors
    leave_one_out: Errors  # what a new kernel can expect: the family's stated band
    shipped: Errors
    loo_predicted_us: tuple[float, ...]
    observed: tuple[float, float]  # the kernels' own median |error|: leave-one-out, shipped
    offset: Offset  # the shipped model's mean log error on these kernels

    def stated(self, written: bool) -> Errors:
        """The band the calibration states for a new kernel of the family: its
        leave-one-out band where written; where refused, the shipped model's on these
        kernels, never narrower than the leave-one-out one (the same kernels' residuals
        support no narrower band, whichever constants are kept)."""
        if written:
            return self.leave_one_out
        loo, shipped = self.leave_one_out, self.shipped
        return Errors(max(loo.median, shipped.median), max(loo.high, shipped.high),
                      shipped.high_is, shipped.kernels)

    def constants(self, refused: str | None = None) -> FamilyConstants:
        """The family's constants as a profile holds them, with its errors and the band
        it states (:meth:`stated`); a ``refused`` family holds the shipped constants
        (scale 1, no overhead) and why, so the band the profile carries is the band the
        command printed."""
        report = {"kernels": self.in_sample.kernels,
                  "in_sample": self.in_sample.document(),
                  "leave_one_out": self.leave_one_out.document(),
                  "shipped_profile": self.shipped.document(),
                  "stated": self.stated(refused is None).document()}
        if refused is not None:
            return FamilyConstants(1.0, 0.0, {**report, "refused": refused})
        return FamilyConstants(round(self.scale, 5), round(self.launch_us, 4), report)


def fit_chip(model: np.ndarray, measured: np.ndarray) -> ChipFit:
    """The fit to every kernel, and each kernel predicted by a fit to the others; with
    the launch overhead only where that states a narrower leave-one-out band than the
    scale alone (a second number must earn its place on kernels it did not see)."""
    if len(model) < MIN_KERNELS:
        raise ValueError(f"timings: expected at least {MIN_KERNELS} distinct kernels "
                         f"(leave-one-out needs them), got {len(model)}")
    best = _fit_chip(model, measured, launch=False)
    if fits_launch(model):
        with_launch = _fit_chip(model, measured, launch=True)
        if with_launch.leave_one_out.high < best.leave_one_out.high:
            best = with_launch
    return best


def _fit_chip(model: np.ndarray, measured: np.ndarray, launch: bool) -> ChipFit:
    scale, launch_us = fit(model, measured, launch)
    loo = held_out_us(model, measured, launch, scale, launch_us)
    observed = (errors(loo, measured).median, errors(model, measured).median)
    return ChipFit(scale, launch_us, errors(scale * model + launch_us, measured),
                   predictive_errors(loo, measured), predictive_errors(model, measured),
                   tuple(loo), observed, shipped_offset(model, measured))


def refusal(chip: ChipFit) -> str | None:
    """Why ``chip`` must not be written, or None: the shipped constants state a band no
    wider for a new kernel (the same kernels' errors uncalibrated, against each
    predicted by a fit to the others). Fewer free constants win a tie, so a family
    whose misses are per shape, not one scale, keeps the shipped model and is never
    made worse by calibrating it."""
    loo, shipped = chip.leave_one_out.high, chip.shipped.high
    if not chip.offset.clear:
        return (f"the shipped profile is {math.exp(chip.offset.mean) - 1:+.1%} off on "
                f"average over these {chip.shipped.kernels} kernels, inside the "
                f"{QUANTILE:.0%} interval their scatter puts about 0: a scale would fit noise")
    if loo < shipped:
        return None
    return (f"its leave-one-out {chip.leave_one_out.high_is} {loo:.1%} is no better than "
            f"the shipped profile's {shipped:.1%} on the same {chip.shipped.kernels} kernels")


@dataclass(frozen=True)
class FamilyOutcome:
    """One family's calibration: its fit, or why it is not written (too few kernels, or a
    shipped model within its kernels' scatter, or a leave-one-out band no narrower)."""

    family: str
    kernels: int
    fit: ChipFit | None
    refused: str | None

    @property
    def written(self) -> bool:
        return self.refused is None


def fit_families(families: np.ndarray, model: np.ndarray,
                 measured: np.ndarray) -> list[FamilyOutcome]:
    """Each family present among the kernels (``families[i]`` is kernel i's), fitted
    from its own kernels alone, in :data:`~.families.FAMILIES` order."""
    out = []
    for family in (f for f in FAMILIES if f in set(families.tolist())):
        mine = families == family
        n = int(mine.sum())
        if n < MIN_KERNELS:
            out.append(FamilyOutcome(family, n, None, (
                f"family {family} refused: {n} distinct kernel{'s' if n != 1 else ''}, a "
                f"family's fit needs at least {MIN_KERNELS} (leave-one-out needs them); "
                "it keeps the shipped model")))
            continue
        fit = fit_chip(model[mine], measured[mine])
        why = refusal(fit)
        out.append(FamilyOutcome(family, n, fit, None if why is None
                                 else f"family {family} refused: {why}"))
    return out


def chip_calibration(base: str, outcomes: list[FamilyOutcome],
                     report: dict[str, Any]) -> ChipCalibration:
    """The profile's calibration section: every fitted family's constants, a refused one's
    the shipped constants with the band the calibration states for it (a family with
    too few kernels to fit is left out: the shipped band holds)."""
    return ChipCalibration(base, {o.family: o.fit.constants(o.refused) for o in outcomes
                                  if o.fit is not None}, report)
