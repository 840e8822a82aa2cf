"""An operator's study as the tuner drives it: one interface for a GEMM shape's study
(a :class:`StudySession` on the shape's spec and the run's backend) and for an
attention or vector kernel's study (a :class:`SpaceSession` on its own space,
measured by the simulator's model, or on the npu backend by its kind's program:
:mod:`.npu_layer`). The session picks the sampler, makes or loads the study and
runs a chunk here or on worker processes, for both alike; both can be opened by
name by a follower (:func:`join_study`).

The tuner reads and measures every operator through :class:`OperatorUnit`, so
the budget, the scheduler, re-timing and the results do not care which kind
an operator is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import optuna
from optuna.trial import FrozenTrial

from aoe_optuna.attrs import LAYER_OP_ATTR
from aoe_optuna.backends.base import BackendBase, BuildAhead
from aoe_optuna.backends.build_time import part_build_time
from aoe_optuna.backends.registry import backend_class, backend_options
from aoe_optuna.hardware.profile import SocProfile, load_profile
from aoe_optuna.operators.layer_ops import MODELLED_BY, LayerOperator
from aoe_optuna.operators.npu_layer import ProgramEvaluator
from aoe_optuna.operators.shapes import OperatorShape
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.study.create import StudyError
from aoe_optuna.study.run.loop import Budget, RunResult
from aoe_optuna.study.run.objective import Evaluation
from aoe_optuna.study.session import (
    SamplerRequest,
    SpaceSession,
    StoredPlan,
    StudySession,
    stored_plan,
)

SOC_KEY = "soc"  # in that plan: the SoC whose profile the model runs on
BACKEND_KEY = "backend"  # in that plan, off the simulator: the spec's backend section
LAYER_WORKER = "aoe_optuna.operators.layer_worker"  # the worker module of those studies
LAYER_METRIC = "calls/s"  # such a study's value: calls of the kernel per second
CHARGE_KEY = "model_charge"  # a modelled study's: what one measurement costs (ModelCharge)


class OperatorUnit(Protocol):
    study: optuna.Study
    space: SearchSpace
    profile: SocProfile
    noise: float | None  # relative noise of one timing (None: nothing to re-time)
    followable: bool  # whether a follower on another host can measure it

    def enqueue_baseline(self) -> None: ...
    def baseline_trial(self) -> FrozenTrial | None: ...
    def run(self, budget: Budget, *, n_workers: int, devices: Sequence[str],
            stale_after_s: float | None, max_idle: int,
            builders: int | None = None) -> RunResult: ...
    def remeasure(self, params: Mapping[str, Any], draw: int) -> float | None: ...


class GemmUnit:
    """A GEMM shape's study: the user's spec narrowed to the shape, on the run's backend."""

    followable = True

    def __init__(self, session: StudySession, shape: OperatorShape) -> None:
        self.session = session
        self.study = session.study
        self.spec = session.spec
        self.space = session.spec.space
        self.profile = session.spec.profile
        self.noise = session.spec.timing_noise
        self.shape = shape
        self.backend = session.backend

    def enqueue_baseline(self) -> None:
        self.session.enqueue_baseline()

    def baseline_trial(self) -> FrozenTrial | None:
        return self.session.baseline_trial()

    def run(self, budget: Budget, *, n_workers: int, devices: Sequence[str],
            stale_after_s: float | None, max_idle: int,
            builders: int | None = None) -> RunResult:
        return self.session.run(budget, n_workers=n_workers, devices=devices,
                                stale_after_s=stale_after_s, max_idle=max_idle,
                                builders=builders, host_devices=max(n_workers, 1))

    def remeasure(self, params: Mapping[str, Any], draw: int) -> float | None:
        m = self.backend.remeasure(self.space.full_config(params), self.shape.gemm, draw)
        return m.latency_s if m.ok else None


@dataclass(frozen=True)
class ModelCharge:
    """What one modelled measurement of a layer kernel costs on the virtual clock, as the
    simulator charges a GEMM's: one build of the kernel (its part's build time,
    :mod:`aoe_optuna.backends.build_time`, or the spec's ``backend.build_s``), the
    warm-up and timed calls, and the host program's start (``backend.run_s``). Every
    measurement is a new config (a repeat is answered from storage), so each builds."""

    build_s: float
    run_s: float = 0.0
    warmup: int = 10
    repeats: int = 100

    @classmethod
    def of(cls, op: LayerOperator, backend_doc: Mapping[str, Any]) -> ModelCharge:
        """The charge under the spec's simulator section (its options, else the defaults)."""
        build = backend_doc.get("build_s", part_build_time(op.operator_kind.part).seconds)
        return cls(float(build), float(backend_doc.get("run_s", 0.0)),
                   int(backend_doc.get("warmup", cls.warmup)),
                   int(backend_doc.get("repeats", cls.repeats)))

    def cost_s(self, call_s: float) -> float:
        return self.build_s + (self.warmup + self.repeats) * call_s + self.run_s


class ModelEvaluator:
    """The evaluator of an attention or vector study: one call timed by the model. Its
    value (the objective's ``tokens_per_s`` slot) is calls per second; its cost the
    charge's, build included (a build pool's virtual clock overlaps the builds)."""

    def __init__(self, op: LayerOperator, profile: SocProfile,
                 charge: ModelCharge | None = None) -> None:
        self.op = op
        self.seconds = op.model(profile)
        self.roofline_s = op.roofline_s(profile)
        self.charge = charge or ModelCharge.of(op, {})

    def build_ahead(self, full_config: Mapping[str, Any]) -> list[BuildAhead | None]:
        """Nothing to build apart: the model charges the build in :meth:`evaluate`."""
        return [None]

    def evaluate(self, full_config: Mapping[str, Any]) -> Evaluation:
        t = self.seconds(full_config)
        flops = self.op.flops()
        return Evaluation(ok=True, tokens_per_s=1.0 / t, latency_s={self.op.kind: t},
                          cost_s=self.charge.cost_s(t), build_s=self.charge.build_s,
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

    def __init__(self, session: SpaceSession, op: LayerOperator, profile: SocProfile,
                 evaluator: ModelEvaluator | ProgramEvaluator,
                 noise: float | None = None) -> None:
        self.session = session
        self.study = session.study
        self.space = session.space
        self.op = op
        self.profile = profile
        self.evaluator = evaluator
        # the model is exact: re-timing could not change a winner; a device's timing can
        self.noise = None if isinstance(evaluator, ModelEvaluator) else noise

    @classmethod
    def create(cls, storage: optuna.storages.BaseStorage, storage_url: str, parent: str,
               op: LayerOperator, profile: SocProfile, sampler: SamplerRequest,
               backend: BackendBase | None = None, backend_doc: Mapping[str, Any] | None = None,
               noise: float | None = None) -> LayerUnit:
        """The tuner's unit: the study created (or loaded when it holds the same problem)
        with its plan and the sampler it runs with. ``backend`` (with the spec's section
        ``backend_doc``, which the plan keeps for workers) times it instead of the model."""
        entry = {**op.plan_entry(parent), SOC_KEY: profile.soc}
        if backend is not None:
            entry[BACKEND_KEY] = dict(backend_doc or {"name": backend.name})
        plan = StoredPlan(LAYER_OP_ATTR, entry, "operator")
        charge = ModelCharge.of(op, backend_doc or {})
        evaluator = _evaluator(op, profile, backend, charge)
        unit = cls(_open(storage, storage_url, op.study_name(parent), op, profile, sampler,
                         evaluator, backend, plan=plan), op, profile, evaluator, noise)
        if isinstance(evaluator, ModelEvaluator):  # for its workers and followers
            unit.study.set_user_attr(CHARGE_KEY, asdict(charge))
        return unit

    @classmethod
    def join(cls, storage: optuna.storages.BaseStorage, storage_url: str, study_name: str,
             sampler: SamplerRequest, worker_index: int = 0) -> LayerUnit:
        """A worker's or a follower's unit on a study the tuner made: writes nothing."""
        plan = stored_plan(storage, study_name, LAYER_OP_ATTR)
        if not isinstance(plan, dict):
            raise StudyError(f"study {study_name!r} is not an attention or vector kernel "
                             "study of an operator run")
        op, profile = LayerOperator.from_plan(plan), load_profile(plan[SOC_KEY])
        backend = None
        if BACKEND_KEY in plan:  # measured on a backend, not the model: the worker's own
            doc = plan[BACKEND_KEY]
            backend = backend_class(doc["name"]).from_options(backend_options(doc), profile)
        charge = stored_plan(storage, study_name, CHARGE_KEY)
        evaluator = _evaluator(op, profile, backend, ModelCharge(**charge)
                               if isinstance(charge, dict) else None)
        return cls(_open(storage, storage_url, study_name, op, profile, sampler, evaluator,
                         backend, worker_index=worker_index), op, profile, evaluator)

    def enqueue_baseline(self) -> None:
        self.session.enqueue_baseline()

    def baseline_trial(self) -> FrozenTrial | None:
        return self.session.baseline_trial()

    def run(self, budget: Budget, *, n_workers: int = 1, devices: Sequence[str] = (),
            stale_after_s: float | None = None, max_idle: int | None = None,
            builders: int | None = None, host_devices: int | None = None) -> RunResult:
        """Measure up to ``budget`` here, or on ``n_workers`` worker processes as a GEMM
        shape's study does (the same plan, budget guard, claims and build pool).
        ``host_devices``: the devices on this host (default one per worker)."""
        return self.session.run(budget, n_workers=n_workers, devices=devices,
                                stale_after_s=stale_after_s, max_idle=max_idle,
                                builders=builders,
                                host_devices=host_devices or max(n_workers, 1))

    def remeasure(self, params: Mapping[str, Any], draw: int) -> float | None:
        if isinstance(self.evaluator, ProgramEvaluator):
            return self.evaluator.remeasure(self.space.full_config(params))
        return self.op.model(self.profile)(self.space.full_config(params))


def _evaluator(op: LayerOperator, profile: SocProfile, backend: BackendBase | None,
               charge: ModelCharge | None = None) -> ModelEvaluator | ProgramEvaluator:
    """What measures a kernel's config: the simulator's model (at ``charge``), or a
    backend that times layer kernels on its device, by its kind's program."""
    if backend is None:
        return ModelEvaluator(op, profile, charge)
    if backend.layer_kernels != "device":
        raise StudyError(f"backend {backend.name!r} times GEMMs only; attention and vector "
                         "kernels need the simulator or npu backend")
    return ProgramEvaluator(op, profile, backend)


def _open(storage: optuna.storages.BaseStorage, storage_url: str, study_name: str,
          op: LayerOperator, profile: SocProfile, sampler: SamplerRequest,
          evaluator: ModelEvaluator | ProgramEvaluator, backend: BackendBase | None,
          **how: Any) -> SpaceSession:
    """A kernel's study as the session opens every study with no spec: its space, CANN's
    default as the baseline, ``evaluator`` as the measurement, its own worker module.
    ``backend``: the one that times it (None: the model, whose backend's device a
    timing then leases)."""
    device = type(backend) if backend is not None else backend_class(MODELLED_BY)
    return SpaceSession.open(storage_url, study_name, op.space(profile), evaluator, sampler,
                             storage=storage, metric=LAYER_METRIC,
                             baseline=op.default_config(profile), worker_module=LAYER_WORKER,
                             device=device, **how)


def join_study(storage: optuna.storages.BaseStorage, storage_url: str, study_name: str,
               sampler: SamplerRequest) -> StudySession | LayerUnit:
    """An operator run's study opened by name, as a follower measures it: a GEMM shape's
    as every spec's study is, an attention or vector kernel's as :meth:`LayerUnit.join`."""
    if stored_plan(storage, study_name, LAYER_OP_ATTR) is not None:
        return LayerUnit.join(storage, storage_url, study_name, sampler)
    return StudySession.open(storage_url, study_name=study_name, sampler=sampler,
                             worker_index=0, storage=storage)
