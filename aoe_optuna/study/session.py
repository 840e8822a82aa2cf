"""One place that assembles a tuning study.

``aoe-tune``, the worker processes, the bench and Python code all come here for
the same steps, in the same order: the spec (given, or the copy stored in the
study), the storage, the study (created or loaded), the backend and the sampler
built once, the baseline enqueued, one evaluator with one roofline rule, and
the run on this process or on worker processes.

Everything that can be checked without the storage is checked before it is
opened, so a refused session writes nothing (and never has to remove a file
another run may have opened since).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna

from aoe_optuna.backends.base import Backend
from aoe_optuna.samplers.registry import DEFAULT_SAMPLER
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.spec.stored import ROOFLINE_ATTR, store_sampler, stored_sampler
from aoe_optuna.study.create import (
    OtherSpecStored,
    default_study_name,
    enqueue_baseline,
    load_or_create,
)
from aoe_optuna.study.file_kind import is_missing
from aoe_optuna.study.objective import Evaluator, TuningObjective
from aoe_optuna.study.runner import Budget, RunResult, StudyProgress, run_study
from aoe_optuna.study.storage import open_storage, use_wal

SEED_RANGE = 2**31  # a seed drawn for a study given none, so that its run can be repeated


class SessionError(ValueError):
    """Input that cannot start a study; the message is one line."""


@dataclass(frozen=True)
class SamplerRequest:
    """The sampler asked for. ``name`` None: the study's stored one (default for a new
    study); ``kwargs``/``seed`` None: the stored ones (none, and a drawn seed, if new)."""

    name: str | None = None
    kwargs: Mapping[str, Any] | None = None
    seed: int | None = None


@dataclass(frozen=True)
class SamplerChoice:
    """The sampler a study runs with, as stored in it (a resume without --sampler gets it)."""

    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    stored: bool = False  # taken from the study, not from the request


def build_sampler(choice: SamplerChoice, spec: StudySpec,
                  worker_index: int = 0) -> optuna.samplers.BaseSampler:
    """The sampler of ``choice`` on the spec's space; worker ``i`` draws with seed + i."""
    from aoe_optuna.samplers.registry import make_sampler

    seed = None if choice.seed is None else choice.seed + worker_index
    try:
        return make_sampler(choice.name, spec=spec, seed=seed, **choice.kwargs)
    except TypeError as exc:
        raise SessionError(f"--sampler-kwargs: {choice.name} does not accept them "
                           f"({exc})") from None
    except ValueError as exc:
        raise SessionError(f"--sampler-kwargs: {exc}") from None


@dataclass
class StudySession:
    """A study ready to measure: storage, study, spec, backend and sampler."""

    storage_url: str
    storage: optuna.storages.BaseStorage
    study: optuna.Study
    spec: StudySpec
    backend: Backend
    sampler_choice: SamplerChoice
    worker_index: int = 0

    @classmethod
    def open(
        cls,
        storage_url: str,
        spec: StudySpec | None = None,
        study_name: str | None = None,
        sampler: SamplerRequest = SamplerRequest(),
        *,
        worker_index: int | None = None,
        storage: optuna.storages.BaseStorage | None = None,
        backend: Backend | None = None,
        enqueue_baseline_now: bool = True,
    ) -> StudySession:
        """Create or load the study. ``spec`` None: resume the stored one. A worker
        (``worker_index`` given) records nothing and enqueues nothing: the run that
        started it did. ``storage`` and ``backend``: already open ones to share (the
        studies of an operator run); ``enqueue_baseline_now`` False: the caller enqueues
        the baseline when it decides (an operator run, after its warm starts)."""
        from aoe_optuna.samplers.registry import SAMPLERS

        if spec is None and study_name is None:
            raise SessionError("pass --config SPEC (new study) or --study-name NAME (resume)")
        if sampler.name is not None and sampler.name not in SAMPLERS:
            raise SessionError(f"--sampler: unknown sampler {sampler.name!r}: expected one of "
                               f"{', '.join(SAMPLERS)}")
        local = storage_file(storage_url)
        new_file = local is not None and is_missing(local)
        if new_file and spec is None:
            raise SessionError(f"--storage: {local} does not exist; pass --config SPEC to "
                               "create a study in it")
        built: optuna.samplers.BaseSampler | None = None
        first = _requested(sampler)
        if spec is not None:
            backend = backend or make_backend(spec)
            if sampler.name is not None or new_file:  # the sampler a new study gets
                built = build_sampler(first, spec, worker_index or 0)

        storage = storage or open_storage(storage_url)
        name = study_name or default_study_name(storage, spec)
        choice = _stored_choice(storage, name, sampler) or first
        if spec is not None and (built is None or choice.stored):
            built = build_sampler(choice, spec, worker_index or 0)
        roofline = spec.roofline_tokens_per_s() if spec is not None else None
        try:
            study, spec = load_or_create(storage, name, spec, roofline)
        except OtherSpecStored:
            if study_name is not None or spec is None:
                raise
            # a derived name that another spec took since it was derived (a run started
            # together with this one): go where this spec would have gone a moment later
            name = default_study_name(storage, spec)
            choice = _stored_choice(storage, name, sampler) or first
            if choice.stored:
                built = build_sampler(choice, spec, worker_index or 0)
            study, spec = load_or_create(storage, name, spec, roofline)
        use_wal(storage)  # nothing is refused past this point
        if backend is None or built is None:  # resumed from the stored spec
            backend = make_backend(spec)
            built = build_sampler(choice, spec, worker_index or 0)
        if worker_index is None:
            store_sampler(study, choice.name, choice.kwargs, choice.seed)
            if enqueue_baseline_now:
                enqueue_baseline(study, spec)
        study.sampler = built
        return cls(storage_url, storage, study, spec, backend, choice, worker_index or 0)

    # -------------------------------------------------------------- measuring
    def evaluator(self) -> Evaluator:
        """The one evaluator: the roofline the study stored at creation, else the spec's."""
        return Evaluator.of_spec(self.spec, self.backend,
                                 self.study.user_attrs.get(ROOFLINE_ATTR))

    def objective(self) -> TuningObjective:
        return TuningObjective(self.spec.space, self.evaluator())

    def run(
        self,
        budget: Budget,
        on_update: Callable[[StudyProgress], None] = lambda p: None,
        *,
        n_workers: int = 1,
        devices: Sequence[str] = (),
        stale_after_s: float | None = None,
        max_idle: int | None = None,
        builders: int | None = None,
    ) -> RunResult:
        """Measure until ``budget`` is spent, here or on ``n_workers`` worker processes.
        ``max_idle``: stop after this many proposals in a row that measure nothing.
        ``builders``: build ahead on this many builders per worker while the worker's
        device times (:mod:`aoe_optuna.study.run.build_pool`)."""
        if n_workers <= 1:
            extra = {} if max_idle is None else {"max_idle": max_idle}
            pool = None
            if builders is not None:
                from aoe_optuna.study.run.build_pool import PoolPlan, device_of

                pool = PoolPlan.for_host(builders, device_of(self.spec.backend["name"]),
                                         self.worker_index)
            return run_study(self.study, self.objective(), budget, on_update,
                             stale_after_s=stale_after_s, pool=pool, **extra)
        from aoe_optuna.study.workers import WorkerPlan, run_workers

        plan = WorkerPlan(self.storage_url, self.study.study_name, self.sampler_choice,
                          budget, stale_after_s, max_idle, builders=builders)
        return run_workers(self.study, budget, on_update, plan, n_workers, list(devices))


def _requested(request: SamplerRequest) -> SamplerChoice:
    seed = request.seed if request.seed is not None else secrets.randbelow(SEED_RANGE)
    return SamplerChoice(request.name or DEFAULT_SAMPLER, dict(request.kwargs or {}), seed)


def _stored_choice(storage: optuna.storages.BaseStorage, study_name: str,
                   request: SamplerRequest) -> SamplerChoice | None:
    """The sampler an existing study last ran with, when the request names none;
    kwargs and seed, when given, replace the stored ones."""
    from aoe_optuna.samplers.registry import SAMPLERS

    if request.name is not None:
        return None
    try:
        study = optuna.load_study(study_name=study_name, storage=storage,
                                  sampler=optuna.samplers.RandomSampler())
    except KeyError:  # a new study
        return None
    stored = stored_sampler(study)
    if stored is None:
        return None
    name, kwargs, seed = stored
    if name not in SAMPLERS:
        raise SessionError(f"study {study_name}: it ran with sampler {name!r}, which this "
                           f"aoe-tune does not have; pass --sampler (one of "
                           f"{', '.join(SAMPLERS)})")
    return SamplerChoice(name, dict(request.kwargs) if request.kwargs is not None else kwargs,
                         request.seed if request.seed is not None else seed, stored=True)


def storage_file(url: str) -> Path | None:
    """The file of a SQLite URL or a Journal path (None for servers and memory)."""
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url[len("sqlite:///"):])
    if url.endswith(".log") and "://" not in url:
        return Path(url)
    return None
