"""An operator's study as the tuner drives it: one interface for a GEMM shape's study
(a StudySession on the shape's spec and the run's backend) and for an attention or
vector kernel's study (its own space, measured by the simulator's model here).

The tuner reads and measures every operator through :class:`OperatorUnit`, so
the budget, the scheduler, re-timing and the results do not care which kind
an operator is.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import optuna
from optuna.trial import FrozenTrial

from aoe_optuna.backends.base import Backend
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.operators.shapes import OperatorShape
from aoe_optuna.samplers.registry import make_sampler
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.spec.stored import store_sampler, stored_sampler
from aoe_optuna.study.create import (
    StudyError,
    baseline_trial,
    config_baseline_trial,
    enqueue_baseline,
    enqueue_config_baseline,
)
from aoe_optuna.study.objective import Evaluation, TuningObjective
from aoe_optuna.study.runner import Budget, RunResult, run_study
from aoe_optuna.study.session import SEED_RANGE, SamplerRequest, StudySession

LAYER_OP_ATTR = "layer_op"  # on an attention or vector study: its plan entry
LAYER_METRIC = "calls/s"  # such a study's value: calls of the kernel per second


class OperatorUnit(Protocol):
    study: optuna.Study
    space: SearchSpace
    profile: SocProfile
    noise: float | None  # relative noise of one timing (None: nothing to re-time)
    followable: bool  # whether a follower on another host can measure it

    def enqueue_baseline(self) -> None: ...
    def baseline_trial(self) -> FrozenTrial | None: ...
    def run(self, budget: Budget, *, n_workers: int, devices: Sequence[str],
            stale_after_s: float | None, max_idle: int) -> RunResult: ...
    def remeasure(self, params: Mapping[str, Any], draw: int) -> float | None: ...


class GemmUnit:
    """A GEMM shape's study: the user's spec narrowed to the shape, on the run's backend."""

    followable = True

    def __init__(self, session: StudySession, spec: StudySpec, shape: OperatorShape,
                 backend: Backend) -> None:
        self.session = session
        self.study = session.study
        self.spec = spec
        self.space = spec.space
        self.profile = spec.profile
        self.noise = spec.timing_noise
        self.shape = shape
        self.backend = backend

    def enqueue_baseline(self) -> None:
        enqueue_baseline(self.study, self.spec)

    def baseline_trial(self) -> FrozenTrial | None:
        return baseline_trial(self.study, self.spec)

    def run(self, budget: Budget, *, n_workers: int, devices: Sequence[str],
            stale_after_s: float | None, max_idle: int) -> RunResult:
        return self.session.run(budget, n_workers=n_workers, devices=devices,
                                stale_after_s=stale_after_s, max_idle=max_idle)

    def remeasure(self, params: Mapping[str, Any], draw: int) -> float | None:
        m = self.backend.remeasure(self.space.full_config(params), self.shape.gemm, draw)
        return m.latency_s if m.ok else None


class ModelEvaluator:
    """The evaluator of an attention or vector study: one call timed by the model. Its
    value (the objective's ``tokens_per_s`` slot) is calls per second."""

    def __init__(self, op: LayerOperator, profile: SocProfile) -> None:
        self.op = op
        self.seconds = op.model(profile)
        self.roofline_s = op.roofline_s(profile)

    def evaluate(self, full_config: Mapping[str, Any]) -> Evaluation:
        t = self.seconds(full_config)
        flops = self.op.flops()
        return Evaluation(ok=True, tokens_per_s=1.0 / t, latency_s={self.op.kind: t},
                          tflops=math.nan if flops is None else flops / t / 1e12,
                          roofline_fraction=self.roofline_s / t)


class LayerUnit:
    """An attention or vector kernel's study, measured in this process: the model takes
    microseconds, so neither worker processes nor followers are needed."""

    followable = False
    noise = None  # the model is exact: re-timing could not change a winner

    def __init__(self, storage: optuna.storages.BaseStorage, parent: str,
                 op: LayerOperator, profile: SocProfile, sampler: SamplerRequest) -> None:
        self.op = op
        self.profile = profile
        self.space = op.space(profile)
        self.baseline = op.default_config(profile)
        self.study = _layer_study(storage, op.study_name(parent),
                                  {**op.plan_entry(parent), "soc": profile.soc})
        held = stored_sampler(self.study)
        name = sampler.name or (held[0] if held else None) or "gp-ucb"
        kwargs = dict(sampler.kwargs) if sampler.kwargs is not None else (
            held[1] if held and held[0] == name else {})
        seed = sampler.seed if sampler.seed is not None else (
            held[2] if held and held[2] is not None else secrets.randbelow(SEED_RANGE))
        store_sampler(self.study, name, kwargs, seed)
        self.study.sampler = make_sampler(name, space=self.space, seed=seed, **kwargs)

    def enqueue_baseline(self) -> None:
        enqueue_config_baseline(self.study, self.baseline)

    def baseline_trial(self) -> FrozenTrial | None:
        return config_baseline_trial(self.study, self.baseline)

    def run(self, budget: Budget, *, n_workers: int, devices: Sequence[str],
            stale_after_s: float | None, max_idle: int) -> RunResult:
        objective = TuningObjective(self.space, ModelEvaluator(self.op, self.profile))
        return run_study(self.study, objective, budget, stale_after_s=stale_after_s,
                         max_idle=max_idle)

    def remeasure(self, params: Mapping[str, Any], draw: int) -> float | None:
        return self.op.model(self.profile)(self.space.full_config(params))


def _layer_study(storage: optuna.storages.BaseStorage, name: str,
                 plan: dict[str, Any]) -> optuna.Study:
    """Create the study, or load it when it holds the same problem."""
    study = optuna.create_study(storage=storage, study_name=name, direction="maximize",
                                load_if_exists=True)
    held = study.user_attrs.get(LAYER_OP_ATTR)
    if held is None:
        study.set_metric_names([LAYER_METRIC])
        study.set_user_attr(LAYER_OP_ATTR, plan)
    elif held != plan:
        raise StudyError(f"study {name!r} holds another operator ({held.get('kind')} "
                         f"{held.get('problem')})")
    return study
