"""One place that assembles a tuning study.

``aoe-tune``, the worker processes, an operator run's studies, the bench and
Python code all come here for the same steps, in the same order: the spec
(given, or the copy stored in the study), the storage, the study (created or
loaded), the backend and the sampler built once (one rule picks the sampler:
:func:`choose_sampler`), the baseline enqueued, one evaluator with one roofline
rule, and the run under the budget guard on this process or on worker processes
(:meth:`Session.run`, the one run of every study).

A study whose space is not a spec's (an operator run's attention or vector
kernel, a bench run on a recorded space) is a :class:`SpaceSession`: the caller
builds the space and the evaluator, the session does the rest the same way.

Everything that can be checked without the storage is checked before it is
opened, so a refused session writes nothing (and never has to remove a file
another run may have opened since).
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import optuna
from optuna.trial import FrozenTrial

from aoe_optuna.attrs import SPACE_PARAMS_ATTR
from aoe_optuna.backends.base import BackendBase
from aoe_optuna.samplers.registry import DEFAULT_SAMPLER
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.spec.stored import (
    ROOFLINE_ATTR,
    store_sampler,
    stored_sampler,
    stored_spec,
)
from aoe_optuna.study.create import (
    OtherSpecStored,
    StudyError,
    baseline_trial,
    config_baseline_trial,
    default_study_name,
    enqueue_baseline,
    enqueue_config_baseline,
    load_or_create,
    stamp_environment,
)
from aoe_optuna.study.run.loop import Budget, RunResult, StudyProgress, run_study
from aoe_optuna.study.run.objective import ConfigEvaluator, Evaluator, TuningObjective
from aoe_optuna.study.run.sampler_choice import SamplerChoice
from aoe_optuna.study.run.worker_pool import WORKER_MODULE, WorkerPlan, run_workers
from aoe_optuna.study.storage.file_kind import is_missing, storage_file
from aoe_optuna.study.storage.opening import open_storage, use_wal
from aoe_optuna.study.storage.redact import redact_url
from aoe_optuna.study.storage.write_once import set_once

if TYPE_CHECKING:
    from aoe_optuna.space.search_space import SearchSpace
    from aoe_optuna.spec.race import RaceSettings
    from aoe_optuna.study.race.outcome import Certified

SEED_RANGE = 2**31  # a seed drawn for a study given none, so that its run can be repeated
IN_MEMORY = "<in memory>"  # the storage URL of a study this process alone holds (the bench's)


class SessionError(ValueError):
    """Input that cannot start a study; the message is one line."""


@dataclass(frozen=True)
class SamplerRequest:
    """The sampler asked for. ``name`` None: the study's stored one (default for a new
    study); ``kwargs``/``seed`` None: the stored ones (none, and a drawn seed, if new)."""

    name: str | None = None
    kwargs: Mapping[str, Any] | None = None
    seed: int | None = None
    prior: Any = None  # a ConfigPrior for a sampler that takes one (not stored in the study)


def choose_sampler(request: SamplerRequest,
                   stored: tuple[str, dict[str, Any], int | None] | None = None
                   ) -> SamplerChoice:
    """The one rule for every study's sampler. A request that names one gets it, with its
    kwargs (else none) and its seed (else a drawn one); a request that names none gets
    the ``stored`` one, its kwargs and seed replaced where the request gives them; with
    nothing stored, the default sampler."""
    if request.name is not None or stored is None:
        seed = request.seed if request.seed is not None else secrets.randbelow(SEED_RANGE)
        return SamplerChoice(request.name or DEFAULT_SAMPLER, dict(request.kwargs or {}), seed,
                             prior=request.prior)
    name, kwargs, seed = stored
    return SamplerChoice(name, dict(request.kwargs if request.kwargs is not None else kwargs),
                         request.seed if request.seed is not None else seed, stored=True,
                         prior=request.prior)


def build_sampler(choice: SamplerChoice, spec: StudySpec | None = None,
                  worker_index: int = 0, *,
                  space: SearchSpace | None = None) -> optuna.samplers.BaseSampler:
    """The sampler of ``choice`` on the spec's space (or on ``space``, a study with no
    spec); worker ``i`` draws with seed + i."""
    from aoe_optuna.samplers.registry import make_sampler, takes_prior

    seed = None if choice.seed is None else choice.seed + worker_index
    prior = choice.prior
    if prior is None and spec is not None and spec.prior is not None and takes_prior(choice.name):
        from aoe_optuna.study.prior_of import PriorError, build_prior

        try:
            prior = build_prior(spec)
        except PriorError as exc:
            raise SessionError(str(exc)) from None
    extra = {} if prior is None else {"prior": prior}
    try:
        return make_sampler(choice.name, spec=spec, space=space, seed=seed, **choice.kwargs,
                            **extra)
    except TypeError as exc:
        raise SessionError(f"--sampler-kwargs: {choice.name} does not accept them "
                           f"({exc})") from None
    except ValueError as exc:
        raise SessionError(f"--sampler-kwargs: {exc}") from None


class Session(ABC):
    """A study ready to measure, and the one run of every study (:meth:`run`): what a
    :class:`StudySession` and a :class:`SpaceSession` share."""

    study: optuna.Study
    storage_url: str
    sampler_choice: SamplerChoice
    worker_index: int
    worker_module: str | None  # the ``python -m`` module its workers run (None: none)
    device: type[BackendBase] | None  # the backend whose device a timing leases (builders)

    @abstractmethod
    def objective(self) -> TuningObjective:
        """What one trial of the study runs."""

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
        host_devices: int = 1,
    ) -> RunResult:
        """Measure until ``budget`` is spent, on this process (:meth:`objective` under the
        budget guard) or on ``n_workers`` processes of :attr:`worker_module` that each
        open the study by name. ``max_idle``: stop after this many proposals in a row
        that measure nothing. ``builders``: each process builds ahead on that many
        builders while its device (:attr:`device`'s) times
        (:mod:`aoe_optuna.study.run.build_pool`); where each device's host program keeps
        a core, it is one of the last ``host_devices`` cores."""
        if n_workers <= 1:
            extra = {} if max_idle is None else {"max_idle": max_idle}
            pool = None
            if builders is not None:
                from aoe_optuna.study.run.build_pool import PoolPlan

                if self.device is None:
                    raise SessionError("--builders: this study has no backend to build for")
                reserve = host_devices if self.device.host_core_per_device else 0
                pool = PoolPlan.for_host(builders, self.device.leased_device(),
                                         self.worker_index, reserve=reserve)
            return run_study(self.study, self.objective(), budget, on_update,
                             stale_after_s=stale_after_s, pool=pool, **extra)
        if self.worker_module is None:
            raise SessionError(f"study {self.study.study_name!r} has no worker module: "
                               "it runs on this process only")
        if self.storage_url == IN_MEMORY:
            raise SessionError("a study held in memory cannot run on worker processes")
        if self.sampler_choice.prior is not None:
            # a worker rebuilds its sampler from the study's storage and its command line;
            # an object in this process reaches neither, and a prior lost on the way
            # would leave the workers searching without it and nothing saying so
            raise SessionError("a prior given as an object (SamplerRequest.prior) cannot "
                               "reach worker processes: name it in the spec's prior (or "
                               "aoe-tune --prior), which each worker builds, or run on one "
                               "process")
        plan = WorkerPlan(self.storage_url, self.study.study_name, self.sampler_choice,
                          budget, stale_after_s, max_idle, module=self.worker_module,
                          builders=builders, host_devices=n_workers)
        return run_workers(self.study, budget, on_update, plan, n_workers, list(devices))


@dataclass
class StudySession(Session):
    """A study ready to measure: storage, study, spec, backend and sampler."""

    storage_url: str
    storage: optuna.storages.BaseStorage
    study: optuna.Study
    spec: StudySpec
    backend: BackendBase
    sampler_choice: SamplerChoice
    worker_index: int = 0
    worker_module: ClassVar[str] = WORKER_MODULE  # its workers: aoe_optuna.study.worker

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
        backend: BackendBase | None = None,
        enqueue_baseline_now: bool = True,
    ) -> StudySession:
        """Create or load the study. ``spec`` None: resume the stored one. A worker
        (``worker_index`` given) records nothing and enqueues nothing: the run that
        started it did. ``storage`` and ``backend``: already open ones to share (the
        studies of an operator run, a bench run's memory); ``enqueue_baseline_now``
        False: the caller enqueues the baseline when it decides (an operator run, after
        its warm starts), or never (the bench)."""
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
        first = choose_sampler(sampler)
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
        if backend is None or built is None:  # resumed from the stored spec
            backend = make_backend(spec)  # may refuse: a compiler or toolkit this host lacks
            built = build_sampler(choice, spec, worker_index or 0)
        use_wal(storage)  # nothing is refused past this point
        if worker_index is None:
            store_sampler(study, choice.name, choice.kwargs, choice.seed)
            stamp_environment(study, backend.environment())
            if enqueue_baseline_now:
                enqueue_baseline(study, spec)
        study.sampler = built
        return cls(storage_url, storage, study, spec, backend, choice, worker_index or 0)

    # -------------------------------------------------------------- measuring
    @property
    def space(self) -> SearchSpace:
        return self.spec.space

    @property
    def device(self) -> type[BackendBase]:
        """The spec's backend: its device is what a timing leases."""
        return self.spec.backend_kind

    def evaluator(self) -> Evaluator:
        """The one evaluator: the roofline the study stored at creation, else the spec's."""
        return Evaluator.of_spec(self.spec, self.backend,
                                 self.study.user_attrs.get(ROOFLINE_ATTR))

    def objective(self) -> TuningObjective:
        return TuningObjective(self.spec.space, self.evaluator())

    def enqueue_baseline(self) -> bool:
        """Enqueue the spec's baseline config once, so it is measured first."""
        return enqueue_baseline(self.study, self.spec)

    def certify(self, on_event: Callable[[str], None] = lambda s: None,
                stale_after_s: float = 3600.0) -> Certified | None:
        """Race the search's best configs as the spec's ``race`` section says, or resume
        or read its race (:mod:`aoe_optuna.study.race`)."""
        return certify_study(self.study, self.spec.space, self.evaluator(), self.spec.race,
                             self.spec.timing_noise, on_event, stale_after_s)

    def baseline_trial(self) -> FrozenTrial | None:
        return baseline_trial(self.study, self.spec)


@dataclass(frozen=True)
class StoredPlan:
    """What a study with no spec holds instead (an operator run's kernel problem): written
    once under ``key``; a study that holds another plan is refused."""

    key: str
    value: dict[str, Any]
    what: str = "plan"  # how the refusal names it


@dataclass
class SpaceSession(Session):
    """A study on a space and an evaluator its caller builds: no spec, no backend (an
    operator run's attention or vector kernel, the bench's recorded spaces). Sampler
    choice, budget guard and the local-or-workers run are a :class:`StudySession`'s."""

    storage_url: str
    storage: optuna.storages.BaseStorage
    study: optuna.Study
    space: SearchSpace
    evaluator: ConfigEvaluator
    sampler_choice: SamplerChoice
    baseline: dict[str, Any] | None = None
    worker_module: str | None = None  # the ``python -m`` module its workers run
    worker_index: int = 0
    device: type[BackendBase] | None = None  # the backend its evaluator measures on

    @classmethod
    def open(
        cls,
        storage_url: str,
        study_name: str,
        space: SearchSpace,
        evaluator: ConfigEvaluator,
        sampler: SamplerRequest = SamplerRequest(),
        *,
        storage: optuna.storages.BaseStorage | None = None,
        plan: StoredPlan | None = None,
        metric: str | None = None,
        baseline: dict[str, Any] | None = None,
        worker_index: int | None = None,
        worker_module: str | None = None,
        device: type[BackendBase] | None = None,
    ) -> SpaceSession:
        """Create the study (or load it, when it holds the same ``plan``), store the
        sampler it runs with and its parameter names (what a dead worker's trial had
        chosen is told from them: ``study.recovery``). A worker or a follower
        (``worker_index`` given) loads it and writes nothing. A named sampler is built
        before the storage is opened: refused, it leaves nothing behind. ``device``:
        the backend the evaluator measures on, for a run with builders (None: none)."""
        index = worker_index or 0
        choice = choose_sampler(sampler) if sampler.name is not None else None
        built = None if choice is None else build_sampler(choice, space=space,
                                                          worker_index=index)
        storage = storage or open_storage(storage_url)
        if worker_index is None:
            study = optuna.create_study(storage=storage, study_name=study_name,
                                        direction="maximize", load_if_exists=True)
            if metric is not None and (plan is None or plan.key not in study.user_attrs):
                study.set_metric_names([metric])
            if plan is not None:
                hold_plan(study, plan)
        else:
            study = _load(storage, study_name)
        if choice is None or built is None:  # the study's own sampler
            choice = choose_sampler(sampler, _stored_sampler(study))
            built = build_sampler(choice, space=space, worker_index=index)
        if worker_index is None:
            store_sampler(study, choice.name, choice.kwargs, choice.seed)
            study.set_user_attr(SPACE_PARAMS_ATTR, list(space.names))
        study.sampler = built
        return cls(storage_url, storage, study, space, evaluator, choice, baseline,
                   worker_module, index, device)

    def objective(self) -> TuningObjective:
        return TuningObjective(self.space, self.evaluator)

    def certify(self, settings: RaceSettings, timing_noise: float | None,
                on_event: Callable[[str], None] = lambda s: None,
                stale_after_s: float = 3600.0) -> Certified | None:
        """Race the search's best configs on this study's evaluator (one that re-times:
        an :class:`Evaluator`)."""
        if not isinstance(self.evaluator, Evaluator):
            raise SessionError("this study's evaluator cannot re-time a config")
        return certify_study(self.study, self.space, self.evaluator, settings, timing_noise,
                             on_event, stale_after_s)

    def enqueue_baseline(self) -> bool:
        """Enqueue the baseline config once (none given: nothing)."""
        return enqueue_config_baseline(self.study, self.baseline)

    def baseline_trial(self) -> FrozenTrial | None:
        return config_baseline_trial(self.study, self.baseline)


def certify_study(study: optuna.Study, space: SearchSpace, evaluator: Evaluator,
                  settings: RaceSettings, timing_noise: float | None,
                  on_event: Callable[[str], None] = lambda s: None,
                  stale_after_s: float = 3600.0) -> Certified | None:
    """The study's race, each re-timing a new measurement of the config on ``evaluator``
    (its cost in seconds per token)."""
    from aoe_optuna.study.race.run import race_study

    def remeasure(params: Mapping[str, Any], draw: int) -> tuple[float | None, float | None]:
        ev = evaluator.remeasure(space.full_config(params), draw)
        ok = ev.ok and ev.tokens_per_s > 0
        return (1.0 / ev.tokens_per_s if ok else None), ev.rel_se

    return race_study(study, remeasure, settings, timing_noise, stale_after_s=stale_after_s,
                      on_event=on_event)


def hold_plan(study: optuna.Study, plan: StoredPlan) -> None:
    """Write ``plan`` once; of two runs that start the study together the first one's
    stays, and one asking for another plan is refused."""
    held = set_once(study, plan.key, plan.value)
    if held != plan.value:
        differs = next((k for k in sorted({*held, *plan.value}, key=str)
                        if held.get(k) != plan.value.get(k)), "?")
        raise StudyError(f"study {study.study_name!r} holds another {plan.what} ({differs}: "
                         f"{held.get(differs)!r} stored, {plan.value.get(differs)!r} asked)")


def stored_plan(storage: optuna.storages.BaseStorage, study_name: str,
                key: str) -> Any:
    """What ``study_name`` holds under ``key`` (None: nothing), read without writing."""
    return _load(storage, study_name).user_attrs.get(key)


@dataclass(frozen=True)
class FoundStudy:
    """A study looked up before anything is written: its storage, its spec (the one
    given, else the one it stored) and what it holds (empty: not made yet)."""

    storage: optuna.storages.BaseStorage
    name: str
    spec: StudySpec
    attrs: dict[str, Any]


def find_study(storage_url: str, study_name: str, spec: StudySpec | None) -> FoundStudy:
    """Open the storage and read ``study_name``, if it is there: a run that resumes takes
    its stored settings from it. Refused (one line) when there is no spec to run."""
    local = storage_file(storage_url)
    if spec is None and local is not None and is_missing(local):
        raise SessionError(f"--storage: {local} does not exist; pass --config SPEC to "
                           "start a run in it")
    storage = open_storage(storage_url)
    attrs: dict[str, Any] = {}
    if study_name in optuna.get_all_study_names(storage):
        study = _load(storage, study_name)
        attrs = dict(study.user_attrs)
        spec = spec if spec is not None else stored_spec(study)
    if spec is None:
        raise SessionError(f"study {study_name!r} is not a study of aoe-tune in "
                           f"{redact_url(storage_url)}; pass --config to create it")
    return FoundStudy(storage, study_name, spec, attrs)


def _load(storage: optuna.storages.BaseStorage, study_name: str) -> optuna.Study:
    return optuna.load_study(study_name=study_name, storage=storage,
                             sampler=optuna.samplers.RandomSampler())


def _stored_sampler(study: optuna.Study) -> tuple[str, dict[str, Any], int | None] | None:
    """The sampler ``study`` last ran with; refused when this aoe-tune lacks it."""
    from aoe_optuna.samplers.registry import SAMPLERS

    stored = stored_sampler(study)
    if stored is not None and stored[0] not in SAMPLERS:
        raise SessionError(f"study {study.study_name}: it ran with sampler {stored[0]!r}, "
                           f"which this aoe-tune does not have; pass --sampler (one of "
                           f"{', '.join(SAMPLERS)})")
    return stored


def _stored_choice(storage: optuna.storages.BaseStorage, study_name: str,
                   request: SamplerRequest) -> SamplerChoice | None:
    """The sampler an existing study last ran with, when the request names none (see
    :func:`choose_sampler`); None for a request that names one, or a new study."""
    if request.name is not None:
        return None
    try:
        study = _load(storage, study_name)
    except KeyError:  # a new study
        return None
    stored = _stored_sampler(study)
    return None if stored is None else choose_sampler(request, stored)

