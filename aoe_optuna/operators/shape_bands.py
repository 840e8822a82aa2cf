"""The error band of each tuned operator's simulated time, and of the run's tokens/s.

A GEMM shape measured with a tiling of the study is the GEMM model's
"tiling given" kind; an attention or vector kernel is its knowledge base op's
kind. The end-to-end tokens/s composes them on the step split by the rule of
:mod:`aoe_optuna.calibration.step_band`.
"""

from __future__ import annotations

from aoe_optuna.calibration.band_kinds import GEMM_TILED, layer_kind
from aoe_optuna.calibration.bands import Band, band_for, bands_for
from aoe_optuna.calibration.step_band import (
    MEASURED,
    UNMODELLED_CHECK,
    StepBand,
    StepPart,
    step_band,
)
from aoe_optuna.calibration.workload_band import problem_op
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.operators.kinds.registry import GEMM
from aoe_optuna.operators.state import ShapeResult
from aoe_optuna.operators.tuner import OperatorResult


def shape_kind(result: ShapeResult) -> str:
    if result.shape.operator_kind is GEMM:
        return GEMM_TILED
    return layer_kind(problem_op(result.shape.problem))  # type: ignore[union-attr]


def shape_band(result: ShapeResult, profile: SocProfile | None = None) -> Band:
    """The band of a shape's simulated time on ``profile`` (a calibrated chip's own
    leave-one-out where its calibration covers the kind; else the shipped band)."""
    return band_for(shape_kind(result), profile)


def result_band(result: OperatorResult) -> StepBand:
    """The band of the run's tokens/s: each part of its split by its operators' kinds."""
    parts: list[StepPart] = []
    for part in result.split:
        if part.name == "GEMMs":
            parts.append(StepPart(part.name, GEMM_TILED, part.seconds))
            continue
        if part.name == "other":
            parts.append(StepPart(part.name, MEASURED, part.seconds))
            continue
        tuned = [r for r in result.shapes if r.shape.operator_kind is not GEMM
                 and getattr(r.shape.problem, "part", None) == part.name]
        weights = [r.shipped_s * r.shape.weight for r in tuned]
        if not tuned or sum(weights) <= 0:
            parts.append(StepPart(part.name, UNMODELLED_CHECK, part.seconds))
            continue
        parts += [StepPart(part.name, shape_kind(r), part.seconds * w / sum(weights))
                  for r, w in zip(tuned, weights, strict=True)]
    return step_band(parts, bands_for(result.profile))
