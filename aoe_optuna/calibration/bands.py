"""Error bands: how far a simulated figure may be off, by kernel kind, from held-out figures.

A kind's band is where a figure of a source the model never saw may land: the
median and the 80th percentile of |simulated / published - 1| under the
random-effects model of :mod:`.source_spread`, fitted to the kind's held-out
figures of :mod:`.held_out` (each simulated with constants fitted without its
source), grouped by source. Its width comes from the spread between sources (pooled
over the kinds, a kind's own where wider) and within them, and from how few sources
there are, not from how well the figures of the sources at hand agree. A kind with
one source says so, and its high mark is the widest its figures allow: the larger
of that quantile and its largest error. A kind without held-out figures is
``unchecked``: no number is invented for it. :mod:`.band_coverage` checks the rule
by leaving each source out in turn.

The shipped table, ``bands.json`` beside this module, is written by
``scripts/error_bands.py`` with the command, date and library versions that
made it; a test simulates its rows again so it cannot go stale.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from aoe_optuna.calibration.band_kinds import GEMM_LIBRARY, GEMM_TILED, KINDS, LABELS
from aoe_optuna.calibration.source_spread import (
    Between,
    abs_error_quantile,
    fit_spread,
    pooled_between,
)

if TYPE_CHECKING:  # the rows' fits (scipy) are loaded by whoever makes rows, not by a reader
    from aoe_optuna.calibration.held_out import HeldOutRow
    from aoe_optuna.hardware.chip_calibration import ChipCalibration
    from aoe_optuna.hardware.profile import SocProfile

QUANTILE = 0.8
QUANTILE_FROM = 10  # a calibration's own errors: below this many kernels, the largest
BANDS_FILE = "bands.json"
NEW_SOURCE = "80th percentile of a new source"
ON_CHIP = "on this chip"
ONE_SOURCE = "one source: the widest its figures allow"


@dataclass(frozen=True)
class Band:
    """One kind's held-out error; ``median`` and ``high`` None where it is unchecked."""

    kind: str
    figures: int
    sources: int
    median: float | None
    high: float | None
    high_is: str  # NEW_SOURCE, ONE_SOURCE, ON_CHIP..., or "" when unchecked
    bias: float | None  # median signed error: > 0, the model is slow on this kind

    @property
    def checked(self) -> bool:
        return self.median is not None

    def text(self) -> str:
        """``±14.1% median, ±31.0% at the 80th percentile of a new source (32 held-out
        figures, 4 sources)``; a one-source kind says so."""
        if not self.checked:
            return "unchecked (no held-out figures)"
        if self.high_is == ONE_SOURCE:
            return (f"±{self.median:.1%} median, ±{self.high:.1%} the widest its figures "
                    f"allow (one source, {self.figures} held-out figures)")
        if self.high_is.startswith(ON_CHIP):
            return f"±{self.median:.1%} median, ±{self.high:.1%} {self.high_is}"
        return (f"±{self.median:.1%} median, ±{self.high:.1%} {_high_words(self.high_is)} "
                f"({self.figures} held-out figures, {self.sources} "
                f"source{'s' if self.sources != 1 else ''})")

    def document(self) -> dict[str, Any]:
        return {"kind": self.kind, "figures": self.figures, "sources": self.sources,
                "median": _rounded(self.median), "high": _rounded(self.high),
                "high_is": self.high_is, "bias": _rounded(self.bias)}


def _high_words(high_is: str) -> str:
    if high_is[0].isdigit():
        return "at the " + high_is
    return high_is if high_is.startswith("on this chip") else "the largest"


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def source_groups(rows: Sequence[HeldOutRow]) -> list[list[float]]:
    """The log ratios of ``rows``, one list per source, in the order sources first come."""
    groups: dict[str, list[float]] = {}
    for r in rows:
        groups.setdefault(r.source, []).append(float(np.log(r.simulated_us / r.published_us)))
    return list(groups.values())


def band(kind: str, rows: Sequence[HeldOutRow], pooled: Between | None = None) -> Band:
    """``kind``'s band from its held-out ``rows`` (none: unchecked) and the spread
    between sources pooled over the kinds (``None``: this kind's own alone)."""
    if not rows:
        return Band(kind, 0, 0, None, None, "", None)
    groups = source_groups(rows)
    fit = fit_spread(groups, pooled or Between(0.0, 0))
    signed = np.array([r.error for r in rows])
    high = abs_error_quantile(fit, QUANTILE)
    high_is = NEW_SOURCE
    if fit.sources == 1:
        high, high_is = max(high, float(np.max(np.abs(signed)))), ONE_SOURCE
    return Band(kind, len(rows), fit.sources, abs_error_quantile(fit, 0.5), high, high_is,
                float(np.median(signed)))


def by_kind(rows: Iterable[HeldOutRow]) -> dict[str, list[HeldOutRow]]:
    out: dict[str, list[HeldOutRow]] = {k: [] for k in KINDS}
    for r in rows:
        out[r.kind].append(r)
    return out


def bands(rows: Iterable[HeldOutRow]) -> dict[str, Band]:
    """Every kind's band, in :data:`~.band_kinds.KINDS` order, the spread between sources
    pooled over all of them."""
    kinds = by_kind(rows)
    pooled = pooled_between([source_groups(rs) for rs in kinds.values() if rs])
    return {k: band(k, rs, pooled) for k, rs in kinds.items()}


def band_from_document(doc: Mapping[str, Any]) -> Band:
    return Band(str(doc["kind"]), int(doc["figures"]), int(doc["sources"]), doc["median"],
                doc["high"], str(doc["high_is"]), doc["bias"])


@cache
def shipped_document() -> dict[str, Any]:
    """The shipped ``bands.json`` as written by ``scripts/error_bands.py``."""
    text = (resources.files("aoe_optuna.calibration") / BANDS_FILE).read_text()
    return json.loads(text)


def shipped_bands() -> dict[str, Band]:
    """Every kind's shipped band; a kind the file does not hold is unchecked."""
    held = {d["kind"]: band_from_document(d) for d in shipped_document()["bands"]}
    return {k: held.get(k, band(k, ())) for k in KINDS}


def shipped_band(kind: str) -> Band:
    return shipped_bands()[kind]


def label(kind: str) -> str:
    return LABELS[kind]


# The chip families a band kind's kernels belong to (:mod:`.families`).
KIND_FAMILIES: dict[str, tuple[str, ...]] = {
    GEMM_LIBRARY: ("gemm_library",),
    GEMM_TILED: ("gemm_pingpong", "gemm_preload", "gemm_padding", "gemm_split_k"),
}


def chip_band(kind: str, chip: ChipCalibration, family: str | None = None) -> Band | None:
    """A calibrated chip's own band for ``kind`` (or for one ``family`` of it): the band
    its calibration stated for each family (a written family's leave-one-out, a refused
    one's the shipped model's on its kernels: ``ChipFit.stated``; profiles written
    before that hold the leave-one-out alone), the widest over the kind's families,
    where the calibration judged every one of them; None where it did not (the
    shipped band holds)."""
    families = (family,) if family else KIND_FAMILIES.get(kind, (kind,))
    fits = [chip.family(f) for f in families]
    loo = [(f.report.get("stated") or f.report.get("leave_one_out")) if f is not None
           else None for f in fits]
    if not loo or any(not isinstance(x, Mapping) or "median" not in x for x in loo):
        return None
    widest = max(loo, key=lambda x: (float(x["high"]), float(x["median"])))
    kernels = int(widest.get("kernels", 0))
    return Band(kind, kernels, 1, float(widest["median"]), float(widest["high"]),
                f"{ON_CHIP}: leave-one-out of its {kernels} kernels "
                f"({widest.get('high_is', 'largest')})", None)


def band_for(kind: str, profile: SocProfile | None, family: str | None = None) -> Band:
    """The band a figure of ``kind`` on ``profile`` carries: a calibrated chip's own
    leave-one-out error where its calibration covers the kind, else the shipped band."""
    chip = profile.calibration if profile is not None else None
    own = chip_band(kind, chip, family) if chip is not None else None
    return own or shipped_band(kind)


def bands_for(profile: SocProfile | None) -> dict[str, Band]:
    return {k: band_for(k, profile) for k in KINDS}
