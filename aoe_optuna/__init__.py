"""aoe_optuna: kernel auto-tuning for Ascend NPUs, built from Optuna parts.

The objects a library user needs, loaded on first use so that ``import
aoe_optuna`` stays light (no torch, no BoTorch)::

    import optuna
    from aoe_optuna import GPUCBSampler, MeasurementFailed, TuningObjective, load_spec

Layout: ``space`` (parameters, constraints, SearchSpace) < ``hardware`` (SoC
profiles, capacity rules) < ``workload`` < ``backends`` < ``spec`` <
``samplers`` < ``study`` < ``export`` < ``bench`` < ``cli``; a module imports
only from its own layer and those below (checked by import-linter in CI).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aoe_optuna.backends.base import Backend, BackendBase, Measurement
    from aoe_optuna.samplers import GPUCBSampler, LearnerSettings, ReinforceSampler
    from aoe_optuna.space.search_space import SearchSpace
    from aoe_optuna.spec.backend import make_backend
    from aoe_optuna.spec.loader import SpecError, StudySpec, load_spec, spec_from_dict
    from aoe_optuna.study.run.objective import Evaluator, MeasurementFailed, TuningObjective

_LAZY = {
    "GPUCBSampler": "aoe_optuna.samplers",
    "ReinforceSampler": "aoe_optuna.samplers",
    "LearnerSettings": "aoe_optuna.samplers",
    "SearchSpace": "aoe_optuna.space.search_space",
    "load_spec": "aoe_optuna.spec.loader",
    "spec_from_dict": "aoe_optuna.spec.loader",
    "StudySpec": "aoe_optuna.spec.loader",
    "SpecError": "aoe_optuna.spec.loader",
    "make_backend": "aoe_optuna.spec.backend",
    "Backend": "aoe_optuna.backends.base",
    "BackendBase": "aoe_optuna.backends.base",
    "Measurement": "aoe_optuna.backends.base",
    "Evaluator": "aoe_optuna.study.run.objective",
    "MeasurementFailed": "aoe_optuna.study.run.objective",
    "TuningObjective": "aoe_optuna.study.run.objective",
}

__all__ = [
    "Backend", "BackendBase", "Evaluator", "GPUCBSampler", "LearnerSettings", "Measurement",
    "MeasurementFailed", "ReinforceSampler", "SearchSpace", "SpecError", "StudySpec",
    "TuningObjective", "__version__", "load_spec", "make_backend", "spec_from_dict",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the installed metadata on first use (importlib.metadata
        from importlib.metadata import PackageNotFoundError, version  # costs ~40 ms to import)

        try:
            return version("aoe_optuna")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0+unknown"
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
