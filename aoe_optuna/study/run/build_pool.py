"""Build ahead, time one at a time: B builders compile while the device times.

On a real device a measurement is a build (tens of seconds of one host core)
and a timing (about a second on the chip). Run serially, the device idles
while the host compiles. Here ``B + 1`` trials run at once in one process
(Optuna's threads): each asks the sampler for its config (the sampler sees
the others as RUNNING and conditions on them, and claims keep configs
distinct), builds its kernel on a builder core while at most ``B`` builds run,
then waits for the device's lease (:mod:`.device_lease`) and times it there.

The builders are the compiler processes; each build runs pinned to the build
cores and each timing pinned to the device's core (a thread's CPU affinity
passes to the processes it starts). A build that fails, hangs past its limit
or whose compiler is killed is remembered by the backend and reported by its
``measure`` as it is without a pool; a lease held too long by a paused
process fails the trial as a timeout. Each measured trial records where its
wall-clock went: ``build_s``, ``queue_s`` (waiting for a builder or for the
device) and ``time_s``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.storages._heartbeat import BaseHeartbeat, is_heartbeat_enabled
from optuna.trial import FrozenTrial

from aoe_optuna.attrs import ATTR_BUILD_CACHED
from aoe_optuna.study.run.device_lease import DeviceLease, LeaseTimeout
from aoe_optuna.study.run.objective import BuildsAhead, Evaluation, TuningObjective
from aoe_optuna.study.trials.recovery import WorkerTaggingSampler

ATTR_QUEUE_S = "queue_s"
ATTR_TIME_S = "time_s"
ATTR_BUILDERS = "builders"  # read back by pipeline_clock
ATTR_IN_FLIGHT = "in_flight"  # trials the worker ran at once
ATTR_TIMED_AT = "timed_at"  # wall-clock (epoch s) the timing began: when the device was busy


def usable_cpus() -> list[int]:
    """The cores this process may run on, in order."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return list(range(os.cpu_count() or 1))


def default_builders(devices: int = 1) -> int:
    """Host cores minus one per device, at least one."""
    return max(1, len(usable_cpus()) - devices)


@dataclass(frozen=True)
class PoolPlan:
    """How many builders, which cores build, which core (if any) times, and the lease."""

    builders: int
    lease: DeviceLease
    build_cpus: frozenset[int] = frozenset()  # empty: wherever the OS puts them
    timing_cpus: frozenset[int] = frozenset()
    # trials at once; None: one timed while ``builders`` build. 1 builds, then times, the
    # same pinned way (a serial run measured like a pooled one, for comparisons)
    in_flight: int | None = None

    def __post_init__(self) -> None:
        if self.builders < 1:
            raise ValueError(f"builders: expected a positive number, got {self.builders}")
        if self.in_flight is not None and self.in_flight < 1:
            raise ValueError(f"in_flight: expected a positive number, got {self.in_flight}")

    @property
    def threads(self) -> int:
        """Trials in flight: one being timed while ``builders`` build."""
        return self.in_flight or self.builders + 1

    def at_most(self, trials: int | None) -> PoolPlan:
        """This plan with no more than ``trials`` in flight (None: no limit): what a
        budget has left to measure. A trial past it could only be made to be pruned as
        surplus, and every one is a thread queueing for the sampler. The builders stay:
        every trial in flight may build at once."""
        if trials is None or trials >= self.threads:
            return self
        return dataclasses.replace(self, in_flight=max(trials, 1))

    @classmethod
    def for_host(cls, builders: int, device: str | None = None, device_index: int = 0,
                 lease_timeout_s: float = 600.0, reserve: int = 0) -> PoolPlan:
        """The plan on this host. ``device`` None: the cpu backend's device, a core of
        its own (the last usable one, counted down by ``device_index``) with builds on
        the rest. A named device (a card) pins nothing, unless ``reserve`` (the devices
        on this host) keeps the last ``reserve`` cores for their host programs: the
        timing runs on this device's, the builds on the cores no device keeps."""
        cpus = usable_cpus()
        if device is not None and not 0 < reserve < len(cpus):
            return cls(builders, DeviceLease(device, lease_timeout_s))
        kept = cpus[-reserve:] if device is not None else cpus
        core = kept[-1 - device_index % len(kept)]
        rest = frozenset(cpus) - (set(kept) if device is not None else {core})
        name = device if device is not None else f"cpu-core-{core}"
        return cls(builders, DeviceLease(name, lease_timeout_s),
                   build_cpus=rest or frozenset(cpus), timing_cpus=frozenset({core}))


@contextlib.contextmanager
def pinned(cpus: frozenset[int]) -> Iterator[None]:
    """Run this thread (and what it starts) on ``cpus``; put it back afterwards."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


class PooledEvaluator:
    """An evaluator (a spec's :class:`~.objective.Evaluator`, an operator run's kernel)
    whose configs are built ahead and timed under a device lease."""

    def __init__(self, inner: BuildsAhead, plan: PoolPlan) -> None:
        self.inner = inner
        self.plan = plan
        self._build_slots = threading.BoundedSemaphore(plan.builders)

    def build_ahead(self, full_config: Mapping[str, Any]) -> list[Any]:
        return self.inner.build_ahead(full_config)

    def evaluate(self, full_config: Mapping[str, Any]) -> Evaluation:
        asked = time.monotonic()
        with self._build_slots:
            build_from = time.monotonic()
            with pinned(self.plan.build_cpus):
                built = self.inner.build_ahead(full_config)
        built_at = time.monotonic()
        build_s = sum(b.seconds for b in built if b is not None)
        # None where nothing was built apart (a model): the evaluation says, as serial
        real = bool(built) and all(b is not None for b in built)
        cached = all(b.cached for b in built if b is not None) if real else None
        try:
            with self.plan.lease.hold(), pinned(self.plan.timing_cpus):
                timed_from, timed_at = time.monotonic(), time.time()
                result = self.inner.evaluate(full_config)
                timed_s = time.monotonic() - timed_from
        except LeaseTimeout as exc:
            queued = (build_from - asked) + (time.monotonic() - built_at)
            return Evaluation(ok=False, cost_s=build_s, build_s=build_s, failure_kind="timeout",
                              reason=str(exc), phases=self._phases(queued, 0.0, cached))
        queued = (build_from - asked) + (timed_from - built_at)
        result.cost_s += build_s  # the build is part of what the measurement cost
        result.build_s += build_s
        result.phases.update(self._phases(queued, timed_s, cached))
        result.phases[ATTR_TIMED_AT] = round(timed_at, 4)
        return result

    def _phases(self, queue_s: float, time_s: float, cached: bool | None) -> dict[str, Any]:
        return {ATTR_QUEUE_S: round(queue_s, 4), ATTR_TIME_S: round(time_s, 4),
                **({} if cached is None else {ATTR_BUILD_CACHED: cached}),
                ATTR_BUILDERS: self.plan.builders, ATTR_IN_FLIGHT: self.plan.threads}


class SharedSampler(WorkerTaggingSampler):
    """The worker's sampler shared by the pool's threads: one proposal at a time (the
    samplers keep state between calls), the trial each thread runs kept per thread, and
    no reseeding per trial (Optuna reseeds under threads; a seeded study stays seeded)."""

    def __init__(self, inner: optuna.samplers.BaseSampler) -> None:
        self._local = threading.local()
        self._lock = threading.RLock()
        super().__init__(inner)

    @property  # type: ignore[override]
    def current(self) -> int | None:
        return getattr(self._local, "current", None)

    @current.setter
    def current(self, trial_id: int | None) -> None:
        self._local.current = trial_id

    @contextlib.contextmanager
    def _turn(self, study: optuna.Study, trial: FrozenTrial) -> Iterator[None]:
        """The sampler to this thread alone. A trial waiting its turn is alive: its
        heartbeat goes on (Optuna's own starts only once the proposal is made), so no
        worker fails it as stale while many trials queue for a slow proposal."""
        storage = study._storage
        interval = -1.0
        if isinstance(storage, BaseHeartbeat) and is_heartbeat_enabled(storage):
            interval = float(storage.get_heartbeat_interval() or 1)
        while not self._lock.acquire(timeout=interval):
            storage.record_heartbeat(trial._trial_id)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            self._lock.release()

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Tag the trial at once (a trial waiting its turn for a proposal is not an
        orphan), then let the sampler see it, one thread at a time."""
        self.current = trial._trial_id
        self.tag(study, trial)
        with self._turn(study, trial):
            self.inner.before_trial(study, trial)

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict:
        with self._turn(study, trial):
            return super().infer_relative_search_space(study, trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial, search_space: dict) -> dict:
        with self._turn(study, trial):
            return super().sample_relative(study, trial, search_space)

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: Any) -> Any:
        with self._turn(study, trial):
            return super().sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: Any,
                    values: Sequence[float] | None) -> None:
        with self._turn(study, trial):
            super().after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        """Kept seeded (see the class)."""


def pool_objective(study: optuna.Study, objective: TuningObjective, plan: PoolPlan) -> int:
    """Make ``objective`` build ahead and time under the lease, share the study's sampler
    between the pool's threads; the number of threads to optimise with."""
    evaluator = objective.evaluator
    if not callable(getattr(evaluator, "build_ahead", None)):
        raise ValueError("builders: this study's kind measures without builds; run it "
                         "without --builders")
    if not isinstance(evaluator, PooledEvaluator):
        objective.evaluator = PooledEvaluator(evaluator, plan)  # type: ignore[arg-type]
    sampler = study.sampler
    if not isinstance(sampler, SharedSampler):
        inner = sampler.inner if isinstance(sampler, WorkerTaggingSampler) else sampler
        study.sampler = SharedSampler(inner)
    return plan.threads
