"""A workload's step as the parts the band rule composes: which model times which seconds.

The step split (:mod:`aoe_optuna.workload.step_split`) names the parts; the
GEMMs are timed by the GEMM model (a tiling given: the config a study
measures), each attention or vector part by the models of its layer
operators, shared out by what each operator is charged. ``other`` is what the
workload holds as given (a profile's measured time, a fixed charge): it adds
no model error. A part the workload models without layer operators of its
own (attention or vector charged by formula, communication) has no band.
"""

from __future__ import annotations

from aoe_optuna.calibration.band_kinds import GEMM_TILED, layer_kind
from aoe_optuna.calibration.bands import Band, bands_for
from aoe_optuna.calibration.step_band import (
    MEASURED,
    UNMODELLED_CHECK,
    StepBand,
    StepPart,
    step_band,
)
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.layer_problem import LayerProblem
from aoe_optuna.workload.gemm import Workload
from aoe_optuna.workload.step_split import step_split


def problem_op(problem: LayerProblem) -> str:
    """The knowledge base op (and band kind) of a problem: its kind where that is one of
    its ops (a vector kernel), else its one op."""
    ops = problem.KB_FIELDS
    return problem.kind if problem.kind in ops else next(iter(ops))


def workload_parts(workload: Workload, profile: SocProfile,
                   gemm_s: float | None = None) -> list[StepPart]:
    """The step's parts; ``gemm_s`` replaces the GEMMs' roofline with their model time."""
    out: list[StepPart] = []
    for part in step_split(workload, profile):
        if part.name == "GEMMs":
            out.append(StepPart("GEMMs", GEMM_TILED, part.seconds if gemm_s is None else gemm_s))
        elif part.name == "other":
            out.append(StepPart("other", MEASURED, part.seconds))
        else:
            out += _layer_parts(workload, part.name, part.seconds)
    return out


def _layer_parts(workload: Workload, name: str, seconds: float) -> list[StepPart]:
    calls = [c for c in workload.layer_ops if c.part == name]
    charged = sum(c.count * c.charged_s for c in calls)
    if not calls or charged <= 0:
        return [StepPart(name, UNMODELLED_CHECK, seconds)]
    return [StepPart(name, layer_kind(problem_op(c.problem)), seconds * c.count * c.charged_s
                     / charged) for c in calls]


def workload_band(workload: Workload, profile: SocProfile, gemm_s: float | None = None,
                  bands: dict[str, Band] | None = None) -> StepBand:
    """The band of the step's tokens/s (the profile's bands, a calibrated chip's own where
    it fitted a kind, unless ``bands`` are given)."""
    return step_band(workload_parts(workload, profile, gemm_s),
                     bands_for(profile) if bands is None else bands)


def tokens_band(workload: Workload, profile: SocProfile, tokens_per_s: float) -> StepBand:
    """The band of a simulated tokens/s: the step's parts at the GEMM time that figure
    implies (what is left of the step once its fixed time is taken off)."""
    gemm_s = workload.tokens_per_step / tokens_per_s - workload.fixed_s
    return workload_band(workload, profile, max(gemm_s, 0.0))
