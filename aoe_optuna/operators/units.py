"""An operator's study as the tuner drives it: one interface for a GEMM shape's study
(a StudySession on the shape's spec and the run's backend) and for an attention or
vector kernel's study (its own space, measured by the simulator's model, or on the
npu backend by its kind's program: :mod:`.npu_layer`). Both run
a chunk in this process or on worker processes, and both can be opened by name by
a follower (:func:`join_study`).

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

from aoe_optuna.attrs import LAYER_OP_ATTR, SPACE_PARAMS_ATTR
from aoe_optuna.backends.base import Backend
from aoe_optuna.backends.npu.backend import NpuBackend
from aoe_optuna.backends.registry import backend_class, backend_options
from aoe_optuna.hardware.profile import SocProfile, load_profile
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.operators.npu_layer import ProgramEvaluator
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
from aoe_optuna.study.run.loop import Budget, RunResult, run_study
from aoe_optuna.study.run.objective import Evaluation, TuningObjective
from aoe_optuna.study.run.worker_pool import WorkerPlan, run_workers
from aoe_optuna.study.session import SEED_RANGE, SamplerChoice, SamplerRequest, StudySession
from aoe_optuna.study.storage.write_once import set_once

SOC_KEY = "soc"  # in that plan: the SoC whose profile the model runs on
BACKEND_KEY = "backend"  # in that plan, off the simulator: the spec's backend section
LAYER_WORKER = "aoe_optuna.operators.layer_worker"  # the worker module of those studies
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
    """An attention or vector kernel's study. Its measurement is the simulator's model,
    or with an npu backend its kind's program on the device (:mod:`.npu_layer`), run in
    the process that holds the unit: the tuner's, each worker process's
    (``python -m aoe_optuna.operators.layer_worker``) or a follower's. The study holds
    its plan, its SoC, its backend (off the simulator) and its sampler, so any of them
    opens it by name (:meth:`join`)."""

    followable = True

    def __init__(self, study: optuna.Study, storage_url: str, op: LayerOperator,
                 profile: SocProfile, sampler: SamplerChoice, worker_index: int = 0,
                 backend: Backend | None = None, noise: float | None = None) -> None:
        self.study = study
        self.storage_url = storage_url
        self.op = op
        self.profile = profile
        self.evaluator: ModelEvaluator | ProgramEvaluator = (
            ModelEvaluator(op, profile) if backend is None
            else ProgramEvaluator(op, profile, _npu(backend)))
        # the model is exact: re-timing could not change a winner; a device's timing can
        self.noise = None if backend is None else noise
        self.space = op.space(profile)
        self.baseline = op.default_config(profile)
        self.sampler_choice = sampler
        seed = None if sampler.seed is None else sampler.seed + worker_index
        self.study.sampler = make_sampler(sampler.name, space=self.space, seed=seed,
                                          **sampler.kwargs)

    @classmethod
    def create(cls, storage: optuna.storages.BaseStorage, storage_url: str, parent: str,
               op: LayerOperator, profile: SocProfile, sampler: SamplerRequest,
               backend: Backend | None = None, backend_doc: Mapping[str, Any] | None = None,
               noise: float | None = None) -> LayerUnit:
        """The tuner's unit: the study created (or loaded when it holds the same problem)
        with its plan and the sampler it runs with. ``backend`` (with the spec's section
        ``backend_doc``, which the plan keeps for workers) times it instead of the model."""
        plan = {**op.plan_entry(parent), SOC_KEY: profile.soc}
        if backend is not None:
            plan[BACKEND_KEY] = dict(backend_doc or {"name": backend.name})
        study = _layer_study(storage, op.study_name(parent), plan)
        choice = _sampler_choice(study, sampler)
        store_sampler(study, choice.name, choice.kwargs, choice.seed)
        unit = cls(study, storage_url, op, profile, choice, backend=backend, noise=noise)
        # what a dead worker's trial had chosen is told from this (study.trials.recovery)
        study.set_user_attr(SPACE_PARAMS_ATTR, list(unit.space.names))
        return unit

    @classmethod
    def join(cls, storage: optuna.storages.BaseStorage, storage_url: str, study_name: str,
             sampler: SamplerRequest, worker_index: int = 0) -> LayerUnit:
        """A worker's or a follower's unit on a study the tuner made: writes nothing."""
        study = optuna.load_study(study_name=study_name, storage=storage,
                                  sampler=optuna.samplers.RandomSampler())
        plan = study.user_attrs.get(LAYER_OP_ATTR)
        if not isinstance(plan, dict):
            raise StudyError(f"study {study_name!r} is not an attention or vector kernel "
                             "study of an operator run")
        profile = load_profile(plan[SOC_KEY])
        backend = None
        if BACKEND_KEY in plan:  # measured on a backend, not the model: the worker's own
            doc = plan[BACKEND_KEY]
            backend = backend_class(doc["name"]).from_options(backend_options(doc), profile)
        return cls(study, storage_url, LayerOperator.from_plan(plan), profile,
                   _sampler_choice(study, sampler), worker_index, backend=backend)

    def enqueue_baseline(self) -> None:
        enqueue_config_baseline(self.study, self.baseline)

    def baseline_trial(self) -> FrozenTrial | None:
        return config_baseline_trial(self.study, self.baseline)

    def run(self, budget: Budget, *, n_workers: int = 1, devices: Sequence[str] = (),
            stale_after_s: float | None = None, max_idle: int | None = None) -> RunResult:
        """Measure up to ``budget`` here, or on ``n_workers`` worker processes as a GEMM
        shape's study does (the same plan, budget guard and claims)."""
        if n_workers > 1:
            plan = WorkerPlan(self.storage_url, self.study.study_name, self.sampler_choice,
                              budget, stale_after_s, max_idle, module=LAYER_WORKER)
            return run_workers(self.study, budget, lambda p: None, plan, n_workers,
                               list(devices))
        objective = TuningObjective(self.space, self.evaluator)
        extra = {} if max_idle is None else {"max_idle": max_idle}
        return run_study(self.study, objective, budget, stale_after_s=stale_after_s, **extra)

    def remeasure(self, params: Mapping[str, Any], draw: int) -> float | None:
        if isinstance(self.evaluator, ProgramEvaluator):
            return self.evaluator.remeasure(self.space.full_config(params))
        return self.op.model(self.profile)(self.space.full_config(params))


def _npu(backend: Backend) -> NpuBackend:
    """The backend that times layer kernels off the simulator: the npu backend only."""
    if not isinstance(backend, NpuBackend):
        raise StudyError(f"backend {backend.name!r} times GEMMs only; attention and vector "
                         "kernels need the simulator or npu backend")
    return backend


def join_study(storage: optuna.storages.BaseStorage, storage_url: str, study_name: str,
               sampler: SamplerRequest) -> StudySession | LayerUnit:
    """An operator run's study opened by name, as a follower measures it: a GEMM shape's
    as every spec's study is, an attention or vector kernel's as :meth:`LayerUnit.join`."""
    study = optuna.load_study(study_name=study_name, storage=storage,
                              sampler=optuna.samplers.RandomSampler())
    if LAYER_OP_ATTR in study.user_attrs:
        return LayerUnit.join(storage, storage_url, study_name, sampler)
    return StudySession.open(storage_url, study_name=study_name, sampler=sampler,
                             worker_index=0, storage=storage)


def _sampler_choice(study: optuna.Study, request: SamplerRequest) -> SamplerChoice:
    """The request, completed from what the study stored (a new study: gp-ucb, a drawn
    seed)."""
    held = stored_sampler(study)
    name = request.name or (held[0] if held else None) or "gp-ucb"
    kwargs = dict(request.kwargs) if request.kwargs is not None else (
        held[1] if held and held[0] == name else {})
    seed = request.seed if request.seed is not None else (
        held[2] if held and held[2] is not None else secrets.randbelow(SEED_RANGE))
    return SamplerChoice(name, dict(kwargs), seed)


def _layer_study(storage: optuna.storages.BaseStorage, name: str,
                 plan: dict[str, Any]) -> optuna.Study:
    """Create the study, or load it when it holds the same problem."""
    study = optuna.create_study(storage=storage, study_name=name, direction="maximize",
                                load_if_exists=True)
    if LAYER_OP_ATTR not in study.user_attrs:
        study.set_metric_names([LAYER_METRIC])
    held = set_once(study, LAYER_OP_ATTR, plan)  # two runs at once: the first one's problem
    if held != plan:
        raise StudyError(f"study {name!r} holds another operator ({held.get('kind')} "
                         f"{held.get('problem')})")
    return study
