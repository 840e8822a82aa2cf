"""Re-timing a shape's best configs before one is stored: the winner's curse, removed.

The best of many noisy measurements is biased upwards: it won partly by luck.
The few configs whose first timing lies within the noise of the best are
raced: timed again, interleaved round by round (drift of clock or temperature
hits every candidate alike), until the leader separates from each rival or ties
with it within epsilon, or the rounds allowed are spent (the stopping rule of
:mod:`aoe_optuna.certify.race`, as a study's race). The one with the lowest mean
of the new timings wins. The first timings are left out of that mean: they are
the ones the selection favoured. The interval is the 95% interval of the mean
of the log latencies (timing noise is multiplicative): from the backend's known
noise of one timing where it reports one, else a t-interval from the re-timings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aoe_optuna.certify.blocks import quantile
from aoe_optuna.certify.race import RaceRules, RaceState, next_timings, race_state

BAND_SIGMAS = 2.5  # a candidate is within this many noise sigmas of the best (of a difference)
MAX_CANDIDATES = 3
ROUNDS = 2  # rounds each contender is timed at least (a race's first look)
MAX_RACE_ROUNDS = 6  # rounds a race may take before it stops undecided


@dataclass(frozen=True)
class Candidate:
    """A measured config of a shape's study."""

    trial: int
    params: dict[str, Any]
    latency_s: float  # its first timing
    spread: float | None  # the backend's relative noise of one timing, if known


@dataclass(frozen=True)
class Retimed:
    """A candidate timed again ``len(latencies_s)`` times."""

    trial: int
    params: dict[str, Any]
    first_s: float
    latencies_s: tuple[float, ...]
    spread: float | None = None  # known relative noise of one timing

    @property
    def mean_s(self) -> float:
        """Geometric mean of the re-timings (the first timing when there are none)."""
        if not self.latencies_s:
            return self.first_s
        return math.exp(sum(map(math.log, self.latencies_s)) / len(self.latencies_s))

    def interval_s(self, level: float = 0.95) -> tuple[float, float]:
        """The ``level`` t-interval of the mean; a point when fewer than two re-timings."""
        n = len(self.latencies_s)
        if n == 0 or (n < 2 and not self.spread):
            return (self.mean_s, self.mean_s)
        mean = math.log(self.mean_s)
        if self.spread:
            half = quantile(0.5 + level / 2, -1) * self.spread / math.sqrt(n)
        else:
            logs = [math.log(x) for x in self.latencies_s]
            sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
            half = quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
        return (math.exp(mean - half), math.exp(mean + half))


def candidates_to_retime(measured: Sequence[Candidate],
                         max_candidates: int = MAX_CANDIDATES) -> list[Candidate]:
    """The configs that could be the true best: within the noise band of the best timing.

    Without a known noise (a noise-free model) nothing needs re-timing.
    """
    if not measured:
        return []
    ranked = sorted(measured, key=lambda c: (c.latency_s, c.trial))
    best = ranked[0]
    if not best.spread:
        return []
    band = 1.0 + BAND_SIGMAS * math.sqrt(2.0) * best.spread
    return [c for c in ranked if c.latency_s <= best.latency_s * band][:max_candidates]


def race(candidates: Sequence[Candidate],
         time_again: Callable[[Mapping[str, Any], int], float | None],
         rules: RaceRules, budget: int) -> tuple[list[Retimed], RaceState, int]:
    """Race ``candidates`` in interleaved rounds until ``rules`` end it or the next round
    would pass ``budget`` timings: (the candidates still standing with their re-timings,
    best mean first; the race's verdict; the timings spent).

    ``time_again(params, draw)`` returns a latency, or None when the run failed (the
    candidate then drops out: a config that fails on a second run is no winner). Draw
    ``r`` is a candidate's ``r``-th re-timing.
    """
    if not candidates:
        return [], race_state({}, rules), 0
    by_trial = {c.trial: c for c in candidates}
    times: dict[int, list[float]] = {c.trial: [] for c in candidates}
    failed: list[int] = []
    spent = 0
    while True:
        state = race_state(times, rules, failed=failed)
        todo = next_timings(state, {c: times[c] for c in state.active})
        if state.done or not todo or spent + len(todo) > budget:
            break
        for trial in todo:
            latency = time_again(by_trial[trial].params, len(times[trial]) + 1)  # type: ignore[index]
            spent += 1
            if latency is None:
                failed.append(trial)  # type: ignore[arg-type]
                break
            times[trial].append(latency)  # type: ignore[index]
    out = [Retimed(c.trial, dict(c.params), c.latency_s, tuple(times[c.trial]), c.spread)
           for c in candidates if c.trial not in failed]
    # the race's leader first (a tied rival out of the race early may show a lower mean
    # over its fewer rounds), then the rest by mean
    return sorted(out, key=lambda r: (r.trial != state.leader, r.mean_s, r.trial)), state, spent


def retime_cost(candidates: Sequence[Candidate], rounds: int = ROUNDS) -> int:
    """Measurements a race of ``candidates`` takes at least, ``rounds`` each (what the tuner
    holds back for it; charged to the budget)."""
    return len(candidates) * rounds if candidates else 0
