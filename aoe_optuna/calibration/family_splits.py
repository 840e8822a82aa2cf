"""Does ``aoe-tune calibrate`` predict a chip's next kernels within the error it reports?

Every published source is treated as a user's chip: for each kernel family it timed
(:mod:`.families`) with at least :data:`MIN_FIGURES` figures, seeded random halves
of its figures are calibrated the way the command does (:func:`.chip_fit.fit_families`:
the family's scale and launch fitted, or refused and the shipped model kept), and the
other half is predicted. The error it reports is the band the written profile carries
for the family (:func:`.bands.chip_band` on :func:`.chip_fit.chip_calibration`: the
leave-one-out's, or where the family is refused the shipped profile's, no narrower than
the leave-one-out's, as :meth:`.chip_fit.ChipFit.stated` has it); a prediction is within it
when the other half's figure falls inside the stated 80th-percentile mark. The model a
source is calibrated on never saw it: a GEMM source's leave-one-source-out fold (the
constants stored in ``bands.json``), the attention and vector models as they are (no
constant of theirs was fitted to any figure), each figure simulated as its source timed
it.
``scripts/calibration_splits.py`` prints the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aoe_optuna.calibration.bands import chip_band
from aoe_optuna.calibration.chip_fit import MIN_KERNELS, chip_calibration, fit_families

MIN_FIGURES = MIN_KERNELS + 1  # a half to fit and at least one figure to predict
SPLITS = 5


@dataclass(frozen=True)
class Figures:
    """One source's figures of one family: the model's and the published times (us)."""

    source: str
    family: str
    model_us: np.ndarray
    published_us: np.ndarray


@dataclass(frozen=True)
class Split:
    """One half calibrated, the other predicted."""

    written: bool  # the family's fit was kept (not refused)
    reported_median: float
    reported_high: float
    other_errors: tuple[float, ...]  # |predicted / published - 1| of the other half
    shipped_errors: tuple[float, ...]  # the same with the model uncalibrated

    @property
    def inside(self) -> int:
        return sum(e <= self.reported_high for e in self.other_errors)

    @property
    def worse(self) -> bool:
        """The kept fit put the other half further off (median) than no calibration."""
        return self.written and bool(np.median(self.other_errors)
                                     > np.median(self.shipped_errors))


def split_once(figures: Figures, rng: np.random.Generator) -> Split:
    """Calibrate a random half (at least :data:`MIN_KERNELS` figures), predict the rest."""
    n = len(figures.model_us)
    order = rng.permutation(n)
    fitted, other = order[: max(MIN_KERNELS, (n + 1) // 2)], order[max(MIN_KERNELS,
                                                                       (n + 1) // 2):]
    model, published = figures.model_us, figures.published_us
    outcome = fit_families(np.array([figures.family] * len(fitted)), model[fitted],
                           published[fitted])[0]
    shipped = np.abs(model[other] / published[other] - 1.0)
    # the constants and the band as the written profile holds them (a refused family: the
    # shipped constants and the band the command stated for it)
    chip = chip_calibration("split", [outcome], {})
    constants = chip.family(figures.family)
    reported = chip_band(figures.family, chip, figures.family)
    if constants is None or reported is None or reported.high is None:
        raise RuntimeError(f"{figures.source} {figures.family}: the profile holds no band")
    predicted = constants.scale * model[other] + constants.launch_us
    errors = np.abs(predicted / published[other] - 1.0)
    return Split(outcome.written, float(reported.median or 0.0), reported.high,
                 tuple(errors.tolist()), tuple(shipped.tolist()))


@dataclass(frozen=True)
class FamilyResult:
    source: str
    family: str
    figures: int
    splits: tuple[Split, ...]

    @property
    def written(self) -> int:
        return sum(s.written for s in self.splits)

    @property
    def worse(self) -> int:
        return sum(s.worse for s in self.splits)

    @property
    def predicted(self) -> int:
        return sum(len(s.other_errors) for s in self.splits)

    @property
    def inside(self) -> int:
        return sum(s.inside for s in self.splits)

    @property
    def share_inside(self) -> float:
        return self.inside / self.predicted

    @property
    def other_median(self) -> float:
        return float(np.median([e for s in self.splits for e in s.other_errors]))

    @property
    def shipped_median(self) -> float:
        return float(np.median([e for s in self.splits for e in s.shipped_errors]))

    @property
    def reported_median(self) -> float:
        return float(np.median([s.reported_median for s in self.splits]))

    @property
    def reported_high(self) -> float:
        return float(np.median([s.reported_high for s in self.splits]))


def family_splits(figures: Figures, seed: int = 0, splits: int = SPLITS) -> FamilyResult:
    """``splits`` seeded halvings of one source's figures of one family."""
    rng = np.random.default_rng(seed)
    return FamilyResult(figures.source, figures.family, len(figures.model_us),
                        tuple(split_once(figures, rng) for _ in range(splits)))


def markdown(results: Sequence[FamilyResult]) -> list[str]:
    out = ["| source | family | figures | splits kept / refused | kept and worse | other "
           "half median error (uncalibrated) | reported median, 80th pct (median over "
           "splits) | other half inside the reported 80th pct |",
           "|---|---|---|---|---|---|---|---|"]
    for r in results:
        out.append(f"| {r.source} | {r.family} | {r.figures} | {r.written} / "
                   f"{len(r.splits) - r.written} | {r.worse} | {r.other_median:.1%} "
                   f"({r.shipped_median:.1%}) | {r.reported_median:.1%}, "
                   f"{r.reported_high:.1%} | {r.inside} of {r.predicted} "
                   f"({r.share_inside:.0%}) |")
    inside = sum(r.inside for r in results)
    total = sum(r.predicted for r in results)
    if total:
        out.append(f"| **all** | | {sum(r.figures for r in results)} | "
                   f"{sum(r.written for r in results)} / "
                   f"{sum(len(r.splits) - r.written for r in results)} | "
                   f"{sum(r.worse for r in results)} | | | "
                   f"**{inside} of {total} ({inside / total:.0%})** |")
    return out
