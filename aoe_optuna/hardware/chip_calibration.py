"""A chip's own timings, folded into its profile: constants per kernel family on the
simulator's figures.

``aoe-tune calibrate`` fits, for each family of kernels it was given enough timings
of (:mod:`aoe_optuna.space.kernel_families`: the GEMM templates and dispatch
policies, the library's kernel, each attention and vector kernel), an efficiency
scale and a launch overhead, and writes them into a copy of the base profile under
``"calibration"``; the simulator reads them from the profile, so a spec names the
calibrated chip like any other (``hardware.soc`` = the file's path). A family without
timings keeps the shipped model. Each family's in-sample and leave-one-out errors are
kept beside its numbers. Profiles written before families (one ``scales.gemm`` and
one ``launch_us``) read as those two numbers on every GEMM family.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aoe_optuna.space.kernel_families import (
    GEMM_FAMILIES,
    GEMM_TILED_FAMILIES,
    gemm_family_index,
    layer_family,
)

LAYER_FAMILY = re.compile(r"[a-z][a-z0-9_]*")  # an attention or vector kernel's op name


class CalibrationError(ValueError):
    """A profile's calibration section that cannot be used; one line naming the key."""


@dataclass(frozen=True)
class FamilyConstants:
    """One family's fit: ``scale`` on the model's time, ``launch_us`` added to each call."""

    scale: float
    launch_us: float = 0.0
    report: dict[str, Any] = field(default_factory=dict, compare=False)  # kernels, errors

    def seconds(self, model_s: Any) -> Any:
        return model_s * self.scale + self.launch_us * 1e-6

    def document(self) -> dict[str, Any]:
        return {"scale": self.scale, "launch_us": self.launch_us, **self.report}


@dataclass(frozen=True)
class ChipCalibration:
    """Constants per kernel family on the simulator's figures."""

    base: str  # the shipped SoC (or profile file) the constants were fitted on
    families: dict[str, FamilyConstants]
    report: dict[str, Any] = field(default_factory=dict, compare=False)  # rows, date

    def family(self, name: str) -> FamilyConstants | None:
        return self.families.get(name)

    def seconds(self, family: str, model_s: Any) -> Any:
        """The calibrated time of kernels of ``family`` the model times at ``model_s``."""
        fit = self.families.get(family)
        return model_s if fit is None else fit.seconds(model_s)

    def gemm_seconds(self, columns: Mapping[str, Any], model_s: np.ndarray) -> np.ndarray:
        """Each config row's time by its family's constants (a family not fitted: as
        the model has it)."""
        scale = np.array([self._get(f).scale for f in GEMM_TILED_FAMILIES])
        launch = np.array([self._get(f).launch_us for f in GEMM_TILED_FAMILIES]) * 1e-6
        index = gemm_family_index(columns)
        return model_s * scale[index] + launch[index]

    def layer_seconds(self, problem: Any, model_s: Any) -> Any:
        return self.seconds(layer_family(problem), model_s)

    def _get(self, family: str) -> FamilyConstants:
        return self.families.get(family, FamilyConstants(1.0))

    def document(self) -> dict[str, Any]:
        return {"base": self.base,
                "families": {k: v.document() for k, v in self.families.items()},
                **self.report}


def calibration_from_dict(data: Any, where: str) -> ChipCalibration:
    """The ``calibration`` section of a profile, checked."""
    key = f"{where}: key 'calibration"
    if not isinstance(data, Mapping):
        raise CalibrationError(f"{key}': expected an object with base and families")
    base = data.get("base")
    if not isinstance(base, str) or not base:
        raise CalibrationError(f"{key}.base': expected the base profile's name")
    if "families" in data:
        families = _families(data["families"], f"{key}.families")
        report = {k: v for k, v in data.items() if k not in ("base", "families")}
        return ChipCalibration(base, families, report)
    return _before_families(data, base, key)


def _families(doc: Any, key: str) -> dict[str, FamilyConstants]:
    if not isinstance(doc, Mapping) or not doc:
        raise CalibrationError(f"{key}': expected an object such as "
                               "{\"gemm_preload\": {\"scale\": 1.07, \"launch_us\": 0.0}}")
    out: dict[str, FamilyConstants] = {}
    for name, fit in doc.items():
        if not isinstance(name, str) or not (name in GEMM_FAMILIES or (
                not name.startswith("gemm") and LAYER_FAMILY.fullmatch(name))):
            raise CalibrationError(f"{key}.{name}': expected a kernel family: one of "
                                   f"{list(GEMM_FAMILIES)} or an attention or vector op")
        if not isinstance(fit, Mapping):
            raise CalibrationError(f"{key}.{name}': expected an object with scale and "
                                   "launch_us")
        out[name] = FamilyConstants(_scale(fit.get("scale"), f"{key}.{name}.scale"),
                                    _launch(fit.get("launch_us", 0.0),
                                            f"{key}.{name}.launch_us"),
                                    {k: v for k, v in fit.items()
                                     if k not in ("scale", "launch_us")})
    return out


def _before_families(data: Mapping[str, Any], base: str, key: str) -> ChipCalibration:
    """A section written before families: one GEMM scale and launch on every GEMM family."""
    scales = data.get("scales")
    if not isinstance(scales, Mapping) or not scales:
        raise CalibrationError(f"{key}.families': expected an object such as "
                               "{\"gemm_preload\": {\"scale\": 1.07, \"launch_us\": 0.0}}")
    for kind in scales:
        if kind != "gemm":
            raise CalibrationError(f"{key}.scales.{kind}': expected one of ['gemm']")
    scale = _scale(scales["gemm"], f"{key}.scales.gemm")
    launch = _launch(data.get("launch_us", 0.0), f"{key}.launch_us")
    report = {k: v for k, v in data.items() if k not in ("base", "scales", "launch_us")}
    fit = FamilyConstants(scale, launch, {k: report[k] for k in (
        "in_sample", "leave_one_out", "shipped_profile") if k in report})
    return ChipCalibration(base, dict.fromkeys(GEMM_FAMILIES, fit), report)


def _scale(value: Any, key: str) -> float:
    if not _finite(value) or not 0.05 <= value <= 20:
        raise CalibrationError(f"{key}': expected a number from 0.05 to 20, got {value!r}")
    return float(value)


def _launch(value: Any, key: str) -> float:
    if not _finite(value) or not -100 <= value <= 1000:
        raise CalibrationError(f"{key}': expected microseconds from -100 to 1000, "
                               f"got {value!r}")
    return float(value)


def _finite(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
