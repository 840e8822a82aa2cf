"""Error bands: how far a simulated figure may be off, by kernel kind, from held-out figures.

A kind's band is the distribution of |simulated / published - 1| over the
figures of :mod:`.held_out` (each simulated with constants fitted without its
source): the median, and a high mark, the 80th percentile where a kind has at
least :data:`QUANTILE_FROM` figures and the largest error where it has fewer
(a quantile of three figures is a guess). A kind without held-out figures is
``unchecked``: no number is invented for it.

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

from aoe_optuna.calibration.band_kinds import KINDS, LABELS

if TYPE_CHECKING:  # the rows' fits (scipy) are loaded by whoever makes rows, not by a reader
    from aoe_optuna.calibration.held_out import HeldOutRow

QUANTILE = 0.8
QUANTILE_FROM = 10  # fewer held-out figures than this: the high mark is the largest error
BANDS_FILE = "bands.json"


@dataclass(frozen=True)
class Band:
    """One kind's held-out error; ``median`` and ``high`` None where it is unchecked."""

    kind: str
    figures: int
    sources: int
    median: float | None
    high: float | None
    high_is: str  # "80th percentile", "largest of 5", or "" when unchecked
    bias: float | None  # median signed error: > 0, the model is slow on this kind

    @property
    def checked(self) -> bool:
        return self.median is not None

    def text(self) -> str:
        """``±13.9% median, ±25.6% at the 80th percentile (32 figures, 4 sources)``."""
        if not self.checked:
            return "unchecked (no held-out figures)"
        return (f"±{self.median:.1%} median, ±{self.high:.1%} {_high_words(self.high_is)} "
                f"({self.figures} held-out figures, {self.sources} "
                f"source{'s' if self.sources != 1 else ''})")

    def document(self) -> dict[str, Any]:
        return {"kind": self.kind, "figures": self.figures, "sources": self.sources,
                "median": _rounded(self.median), "high": _rounded(self.high),
                "high_is": self.high_is, "bias": _rounded(self.bias)}


def _high_words(high_is: str) -> str:
    return "at the " + high_is if high_is[0].isdigit() else "the largest"


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def band(kind: str, rows: Sequence[HeldOutRow]) -> Band:
    """``kind``'s band from its held-out ``rows`` (none: unchecked)."""
    if not rows:
        return Band(kind, 0, 0, None, None, "", None)
    signed = np.array([r.error for r in rows])
    err = np.abs(signed)
    if len(rows) >= QUANTILE_FROM:
        high = float(np.quantile(err, QUANTILE))
        high_is = f"{round(QUANTILE * 100)}th percentile"
    else:
        high, high_is = float(np.max(err)), f"largest of {len(rows)}"
    return Band(kind, len(rows), len({r.source for r in rows}), float(np.median(err)), high,
                high_is, float(np.median(signed)))


def bands(rows: Iterable[HeldOutRow]) -> dict[str, Band]:
    """Every kind's band, in :data:`~.band_kinds.KINDS` order."""
    by_kind: dict[str, list[HeldOutRow]] = {k: [] for k in KINDS}
    for r in rows:
        by_kind[r.kind].append(r)
    return {k: band(k, rs) for k, rs in by_kind.items()}


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
