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


def pool_finish_times(jobs: Sequence[Job], builders: int, devices: int = 1,
                      in_flight: int | None = None) -> list[float]:
    """Each job's end on ``builders`` build cores and ``devices`` devices, at most
    ``in_flight`` (default builders + devices) jobs proposed and unfinished at once."""
    if builders < 1 or devices < 1:
        raise ValueError(f"builders and devices: expected positive counts, got "
                         f"{builders} and {devices}")
    window = in_flight or builders + devices
    free_builders = [0.0] * builders
    free_devices = [0.0] * devices
    ends: list[float] = []
    for i, job in enumerate(jobs):
        proposed = sorted(ends)[i - window] if i >= window else 0.0
        start = max(heapq.heappop(free_builders), proposed)
        built = start + job.build_s
        heapq.heappush(free_builders, built)
        timed_from = max(heapq.heappop(free_devices), built)
        end = timed_from + job.time_s
        heapq.heappush(free_devices, end)
        ends.append(end)
    return ends


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


def pooled_clock_s(trials: Sequence[FrozenTrial]) -> float | None:
    """The study's clock when its trials ran on a build pool (they say how many builders
    and how many at once); None when none did: the clock is then the sum of costs."""
    builders = [t.user_attrs.get("builders") for t in trials]
    counts = [b for b in builders if isinstance(b, int) and b > 0]
    if not counts:
        return None
    in_flight = [t.user_attrs.get("in_flight") for t in trials]
    window = max((n for n in in_flight if isinstance(n, int) and n > 0), default=None)
    ends = pool_finish_times(jobs_of(trials), max(counts), 1, window)
    return max(ends, default=0.0)
