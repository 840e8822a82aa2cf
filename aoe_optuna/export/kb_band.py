"""A knowledge base entry's ``band``: how far the simulated time it holds may be off.

Optional (entries of measured studies, and knowledge bases written before it,
have none): ``{"kind": "gemm_tiled", "median": 0.168, "high": 0.324,
"high_is": "80th percentile of a new source"}``, the held-out error of the model that
timed the entry, or a calibrated chip's own leave-one-out where its calibration
covers the kind (:mod:`aoe_optuna.calibration.bands`); ``median`` and ``high``
null where that kind is unchecked. A model study's entries, whose value is the
step's tokens/s, carry the step's band (kind ``tokens/s``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aoe_optuna.calibration.bands import Band
from aoe_optuna.calibration.step_band import StepBand

MAX_ERROR = 100.0  # a relative error past 10,000% is a broken file, not a band


def band_field(band: Band) -> dict[str, Any]:
    return {"kind": band.kind, "median": band.median, "high": band.high,
            "high_is": band.high_is}


def step_band_field(band: StepBand) -> dict[str, Any]:
    """A model study's entry (its value the step's tokens/s): the step's composed band."""
    unchecked = (f"; {', '.join(band.unchecked)} ({band.unchecked_share:.1%} of the step) "
                 "unchecked" if band.unchecked else "")
    return {"kind": "tokens/s", "median": round(band.median, 4), "high": round(band.high, 4),
            "high_is": "time-weighted sum of the parts' high marks" + unchecked}


def checked_band(value: Any) -> dict[str, Any] | None:
    """``value`` as an entry's band, or None where it is not one (the caller names it)."""
    if not isinstance(value, Mapping) or set(value) != {"kind", "median", "high", "high_is"}:
        return None
    if not isinstance(value["kind"], str) or not value["kind"] \
            or not isinstance(value["high_is"], str):
        return None
    numbers = [value["median"], value["high"]]
    if all(v is None for v in numbers):
        return dict(value)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               and 0 <= v <= MAX_ERROR for v in numbers):
        return None
    return {**value, "median": float(value["median"]), "high": float(value["high"])}
