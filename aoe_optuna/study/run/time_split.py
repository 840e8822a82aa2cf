"""Where a study's wall-clock went: building, queueing, timing and proposing.

Read from the trials' user attributes (so the dashboard, which shows them per
trial, and the summary agree): ``build_s`` (the build's part of the cost; 0
when the build cache had it), ``time_s`` (timing on the device; without a
pool, the rest of the cost), ``queue_s`` (waiting for a builder or for the
device), ``sampler_s`` (from the trial's creation to its config checked).
Builds saved are measurements whose build the cache already held
(``build_cached``; where a trial does not say, a successful measurement whose
build took 0 s: never a failed one, whose build may never have run), and
repeated proposals answered from storage (nothing built, nothing timed).

A modelled study (the simulator) builds and times nothing real: its builds,
timings and queueing are the virtual clock's (:mod:`.pipeline_clock`), the
timing the rest of each measurement's cost. An operator run's split is the
sum of its chunks' (:meth:`TimeSplit.of_chunks`): one chunk ends before the
next begins, so each starts with idle builders.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import (
    ATTR_BUILD_CACHED,
    ATTR_BUILD_S,
    ATTR_COST,
    ATTR_REPEAT_OF,
    ATTR_SAMPLER_S,
)
from aoe_optuna.study.run.pipeline_clock import jobs_of, pooled_schedule, serial_finish_times


@dataclass(frozen=True)
class TimeSplit:
    build_s: float
    time_s: float
    queue_s: float
    sampler_s: float
    saved_by_cache: int
    saved_by_duplicates: int
    builders: int | None  # the pool's builders, None without one
    pooled_s: float | None  # the clock on the pool (None without one)
    serial_s: float  # the same measurements built and timed in turn

    @classmethod
    def of(cls, trials: Sequence[FrozenTrial], modelled: bool = False) -> TimeSplit:
        """The split of one study's trials (``modelled``: the virtual clock's figures)."""
        build = timing = queue = sampler = 0.0
        cache = duplicates = 0
        builders = [t.user_attrs.get("builders") for t in trials]
        for t in trials:
            a = t.user_attrs
            if ATTR_REPEAT_OF in a:
                duplicates += 1
                continue
            cost = a.get(ATTR_COST)
            if not isinstance(cost, (int, float)):
                continue
            b = float(a.get(ATTR_BUILD_S, 0.0) or 0.0)
            build += b
            timing += cost - b if modelled else float(a.get("time_s", cost - b) or 0.0)
            queue += 0.0 if modelled else float(a.get("queue_s", 0.0) or 0.0)
            sampler += float(a.get(ATTR_SAMPLER_S, 0.0) or 0.0)
            cache += saved_by_cache(t)
        counts = [b for b in builders if isinstance(b, int) and b > 0]
        serial = serial_finish_times(jobs_of(trials))
        slots = pooled_schedule(trials)
        if modelled and slots is not None:
            queue = sum(s.queue_s for s in slots)
        return cls(build, timing, queue, sampler, cache, duplicates,
                   max(counts) if counts else None,
                   None if slots is None else max((s.end for s in slots), default=0.0),
                   serial[-1] if serial else 0.0)

    @classmethod
    def of_chunks(cls, chunks: Sequence[Sequence[FrozenTrial]],
                  modelled: bool = False) -> TimeSplit:
        """The split of runs of measurements one after another (an operator run's
        chunks, each of one study): their sums; the clock of a chunk run in turn is its
        serial clock."""
        parts = [cls.of(c, modelled) for c in chunks]
        pooled = [p for p in parts if p.builders is not None]
        return cls(sum(p.build_s for p in parts), sum(p.time_s for p in parts),
                   sum(p.queue_s for p in parts), sum(p.sampler_s for p in parts),
                   sum(p.saved_by_cache for p in parts),
                   sum(p.saved_by_duplicates for p in parts),
                   max((p.builders or 0 for p in pooled), default=None) or None,
                   sum(p.pooled_s if p.pooled_s is not None else p.serial_s for p in parts)
                   if pooled else None,
                   sum(p.serial_s for p in parts))

    def items(self) -> list[str]:
        """The split as summary items, e.g. ``build 1,200 s``."""
        items = [f"build {self.build_s:,.0f} s", f"timing {self.time_s:,.1f} s",
                 f"sampler {self.sampler_s:,.1f} s"]
        if self.builders is not None:
            items.insert(2, f"queue {self.queue_s:,.1f} s")
        items += [f"builds saved by the cache {self.saved_by_cache:,}",
                  f"by duplicates {self.saved_by_duplicates:,}"]
        if self.builders is not None and self.pooled_s is not None:
            items.append(f"on {self.builders} builder{'s' if self.builders != 1 else ''} "
                         f"{self.pooled_s:,.0f} s "
                         f"(built and timed in turn {self.serial_s:,.0f} s)")
        return items


def saved_by_cache(trial: FrozenTrial) -> bool:
    """Whether ``trial``'s build came from the build cache. A trial that does not say
    (an evaluator that reports seconds only, a study stored before it said) counts
    when it succeeded with a 0 s build: a failure's 0 s may be a build that never ran
    (no compiler, a config refused before its build)."""
    a = trial.user_attrs
    if ATTR_BUILD_CACHED in a:
        return a[ATTR_BUILD_CACHED] is True
    return (trial.state == TrialState.COMPLETE and ATTR_BUILD_S in a
            and float(a[ATTR_BUILD_S] or 0.0) == 0.0)
