"""A chip's own timings, folded into its profile: scale factors on the simulator's figures.

``aoe-tune calibrate`` fits a few numbers to a user's measured kernels (an
efficiency scale per kernel kind and one launch overhead) and writes them
into a copy of the base profile under ``"calibration"``; the simulator reads
them from the profile, so a spec names the calibrated chip like any other
(``hardware.soc`` = the file's path). Kinds without timings keep scale 1.
The fit's in-sample and leave-one-out errors are kept beside the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SCALED_KINDS = ("gemm",)  # kernels the simulator scales; the fit takes rows of these


class CalibrationError(ValueError):
    """A profile's calibration section that cannot be used; one line naming the key."""


@dataclass(frozen=True)
class ChipCalibration:
    """Scale factors on the simulator's figures; ``launch_us`` is added to every kernel."""

    base: str  # the shipped SoC (or profile file) the factors were fitted on
    scales: dict[str, float]
    launch_us: float = 0.0
    report: dict[str, Any] = field(default_factory=dict, compare=False)  # errors, rows, date

    def scale(self, kind: str) -> float:
        return self.scales.get(kind, 1.0)

    def seconds(self, kind: str, model_s: Any) -> Any:
        """The calibrated time of kernels ``kind`` the model times at ``model_s`` (array ok)."""
        if kind not in self.scales:
            return model_s
        return model_s * self.scales[kind] + self.launch_us * 1e-6

    def document(self) -> dict[str, Any]:
        return {"base": self.base, "scales": dict(self.scales), "launch_us": self.launch_us,
                **self.report}


def calibration_from_dict(data: Any, where: str) -> ChipCalibration:
    """The ``calibration`` section of a profile, checked."""
    key = f"{where}: key 'calibration"
    if not isinstance(data, Mapping):
        raise CalibrationError(f"{key}': expected an object with base, scales, launch_us")
    base = data.get("base")
    if not isinstance(base, str) or not base:
        raise CalibrationError(f"{key}.base': expected the base profile's name")
    scales = data.get("scales")
    if not isinstance(scales, Mapping) or not scales:
        raise CalibrationError(f"{key}.scales': expected an object such as {{\"gemm\": 1.07}}")
    checked: dict[str, float] = {}
    for kind, value in scales.items():
        if kind not in SCALED_KINDS:
            raise CalibrationError(f"{key}.scales.{kind}': expected one of {list(SCALED_KINDS)}")
        if not _finite(value) or not 0.05 <= value <= 20:
            raise CalibrationError(f"{key}.scales.{kind}': expected a number from 0.05 to 20, "
                                   f"got {value!r}")
        checked[kind] = float(value)
    launch = data.get("launch_us", 0.0)
    if not _finite(launch) or not -100 <= launch <= 1000:
        raise CalibrationError(f"{key}.launch_us': expected microseconds from -100 to 1000, "
                               f"got {launch!r}")
    report = {k: v for k, v in data.items() if k not in ("base", "scales", "launch_us")}
    return ChipCalibration(base, checked, float(launch), report)


def _finite(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
