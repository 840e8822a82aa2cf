"""The wall-clock of measurements built on B builders and timed on D devices.

A measurement is a build (on one builder core) and a timing (on one device).
Built and timed in turn, the wall-clock is the sum of both. With a build
pool, trial ``i`` is proposed once one of the ``in_flight`` trials before it
has finished, builds on the first free builder, and is timed on the first
free device once built (first come, first timed). This is the clock a
simulator study reports for a chip run with ``--builders B`` (the builds and
timings are the model's: :mod:`aoe_optuna.backends.build_time`), and the
clock its ``max_search_time`` is spent on, as the wall is on a real run.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from optuna.trial import FrozenTrial

from aoe_optuna.attrs import ATTR_BUILD_S, ATTR_COST


@dataclass(frozen=True)
class Job:
    """One measurement: its build's seconds and its timing's seconds."""

    build_s: float
    time_s: float


def serial_finish_times(jobs: Sequence[Job]) -> list[float]:
    """Each job's end when every job builds, then times, one after another."""
    ends, now = [], 0.0
    for job in jobs:
        now += job.build_s + job.time_s
        ends.append(now)
    return ends


@dataclass(frozen=True)
class Slot:
    """When one job was proposed, built and timed on the pool's clock."""

    proposed: float
    build_from: float
    built: float
    timed_from: float
    end: float

    @property
    def queue_s(self) -> float:
        """Waiting for a builder, then for the device."""
        return (self.build_from - self.proposed) + (self.timed_from - self.built)


class PoolClock:
    """The pool's clock, one job at a time in proposal order: ``builders`` build cores,
    ``devices`` devices, the first free builder builds and the first free device times
    (jobs take the device in the order they were proposed)."""

    def __init__(self, builders: int, devices: int = 1, start_s: float = 0.0) -> None:
        if builders < 1 or devices < 1:
            raise ValueError(f"builders and devices: expected positive counts, got "
                             f"{builders} and {devices}")
        self._builders = [start_s] * builders
        self._devices = [start_s] * devices

    def add(self, job: Job, proposed: float) -> Slot:
        """Schedule ``job``, proposed at ``proposed``."""
        start = max(heapq.heappop(self._builders), proposed)
        built = start + job.build_s
        heapq.heappush(self._builders, built)
        timed_from = max(heapq.heappop(self._devices), built)
        end = timed_from + job.time_s
        heapq.heappush(self._devices, end)
        return Slot(proposed, start, built, timed_from, end)


def pool_schedule(jobs: Sequence[Job], builders: int, devices: int = 1,
                  in_flight: int | None = None) -> list[Slot]:
    """Each job's slot on ``builders`` build cores and ``devices`` devices, at most
    ``in_flight`` (default builders + devices) jobs proposed and unfinished at once."""
    clock = PoolClock(builders, devices)
    window = in_flight or builders + devices
    slots: list[Slot] = []
    ends: list[float] = []
    for i, job in enumerate(jobs):
        proposed = sorted(ends)[i - window] if i >= window else 0.0
        slots.append(clock.add(job, proposed))
        ends.append(slots[-1].end)
    return slots


def pool_finish_times(jobs: Sequence[Job], builders: int, devices: int = 1,
                      in_flight: int | None = None) -> list[float]:
    """Each job's end (see :func:`pool_schedule`)."""
    return [s.end for s in pool_schedule(jobs, builders, devices, in_flight)]


def jobs_of(trials: Sequence[FrozenTrial]) -> list[Job]:
    """The measurements of ``trials`` in trial order (trials without a cost skipped)."""
    jobs = []
    for t in sorted(trials, key=lambda t: t.number):
        cost = t.user_attrs.get(ATTR_COST)
        if not isinstance(cost, (int, float)):
            continue
        build = float(t.user_attrs.get(ATTR_BUILD_S, 0.0) or 0.0)
        jobs.append(Job(build, max(float(cost) - build, 0.0)))
    return jobs


def pooled_schedule(trials: Sequence[FrozenTrial]) -> list[Slot] | None:
    """The slots of the trials' measurements when they ran on a build pool (they say how
    many builders and how many at once); None when none did."""
    builders = [t.user_attrs.get("builders") for t in trials]
    counts = [b for b in builders if isinstance(b, int) and b > 0]
    if not counts:
        return None
    in_flight = [t.user_attrs.get("in_flight") for t in trials]
    window = max((n for n in in_flight if isinstance(n, int) and n > 0), default=None)
    return pool_schedule(jobs_of(trials), max(counts), 1, window)


def pooled_clock_s(trials: Sequence[FrozenTrial]) -> float | None:
    """The study's clock when its trials ran on a build pool; None when none did: the
    clock is then the sum of costs."""
    slots = pooled_schedule(trials)
    return None if slots is None else max((s.end for s in slots), default=0.0)
