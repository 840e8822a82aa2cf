"""A race's verdict from its re-timings: the leader, its rivals' fates, when to stop.

Two ways to spend the rounds: every open rival in each round (here, with parking), or
after the first rounds the leader and its most ambiguous rival (``RaceRules.pairs``,
:mod:`.pairs`); :func:`race_state` replays either.

The race's history holds, per candidate, its costs (lower is better) in the order of
the rounds it was timed in; round ``r`` of every candidate was timed in one interleaved
pass. The candidates' first timings are not in it: they are the ones the selection
favoured. After each complete round from ``min_rounds`` on (a look), the candidates
still in the race are compared on log cost:

* the leader is the one with the lowest mean;
* each rival's mean difference to the leader gets an interval from the blocks' pooled
  noise (:mod:`.blocks`); the error rate ``1 - confidence`` is split evenly, Bonferroni
  style, over every rival and every look the race may take, so all the race's
  statements hold together at ``confidence`` however it stops;
* a rival whose interval lies under ``log(1 + epsilon)`` ties with the leader (it is at
  most epsilon slower, and the leader is no more than epsilon slower than it); one
  whose interval lies above zero, past epsilon, is slower; either leaves the race. The
  others stay in it;
* an open rival that is unlikely to be faster than the leader at all (the chance, read
  off its difference's t distribution at this look alone, below ``park``) is parked: it
  stays open (not separated, so in the tie set) but is no longer timed, and the budget
  goes to the candidates that could still be the best. The last open rival is never
  parked: the leader and it race on.

The race is over when no rival is left open or the candidates reach ``max_rounds``;
the caller also ends it when its budget cannot pay for another round. The winner is
then the candidate of the lowest round-adjusted mean among those not found slower
(:func:`winner_of`): when the budget ends a race undecided, the best estimate among
the survivors, not the last leader. Everything is recomputed from the history, so a
race stopped anywhere resumes from what is stored.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from aoe_optuna.certify.blocks import (
    own_sigma,
    quantile,
    residual_sigma,
    round_adjusted_means,
    with_floor,
)
from aoe_optuna.certify.pairs import pairs_state
from aoe_optuna.certify.verdict import (  # noqa: F401 (the race's names, one import away)
    DEFAULT_CONFIDENCE,
    DEFAULT_EPSILON,
    DEFAULT_PARK,
    MAX_ROUNDS,
    MIN_ROUNDS,
    Outcome,
    RaceRules,
    RaceState,
    Verdict,
    logs,
)


def race_state(history: Mapping[Hashable, Sequence[float]], rules: RaceRules,
               floor: float | None = None, failed: Sequence[Hashable] = (),
               joined: Mapping[Hashable, int] | None = None) -> RaceState:
    """Replay the looks of ``history`` (candidates in contender order; ``failed``: those
    whose re-timing failed, out of the race). ``floor``: the least noise of one
    re-timing's log cost (from its own repeats), if known. ``joined``: with rounds of
    pairs, the round each candidate that joined the race late was first timed in."""
    if rules.pairs:
        return pairs_state(history, rules, floor, failed, joined or {})
    order = [c for c in history if c not in set(failed)]
    k0 = len(order)
    alpha = rules.test_alpha(k0 - 1)
    active = list(order)
    verdicts: dict[Hashable, Verdict] = {}
    parked: list[Hashable] = []
    rounds = min((len(history[c]) for c in active), default=0)
    n = rules.min_rounds
    while len(active) >= 2 and n <= rules.max_rounds \
            and all(len(history[c]) >= n for c in active):
        look = _look(active, np.stack([logs(history[c][:n]) for c in active]), rules,
                     alpha, floor)
        for v in look:
            verdicts[v.rival] = v
        parked += _to_park(look, rules.park)
        active = [c for c in active if c not in parked
                  and (c not in verdicts or verdicts[c].outcome == "open")]
        rounds = n
        n += 1
    if len(active) >= 2:
        rounds = min(len(history[c]) for c in active)
    leader = _leader(active, history) if active else None
    verdicts.pop(leader, None)  # a rival once, it leads now: it has no verdict against itself
    held = tuple(c for c in parked if c != leader)
    if k0 == 0:
        return RaceState(None, (), {}, 0, True, "no candidate")
    if k0 == 1 or len(active) == 1:
        own = len(history[active[0]]) if active else 0
        done = own >= rules.min_rounds
        reason = "no rival" if k0 == 1 else "every rival decided"
        return RaceState(leader, tuple(active), verdicts, own, done,
                         reason if done else "timing the winner", held)
    at_max = all(len(history[c]) >= rules.max_rounds for c in active)
    return RaceState(leader, tuple(active), verdicts, rounds, at_max,
                     f"at its limit of {rules.max_rounds} rounds" if at_max else "racing", held)


def _to_park(look: Sequence[Verdict], level: float) -> list[Hashable]:
    """The open rivals of ``look`` unlikely to be faster than the leader (below
    ``level``), all but the likeliest open rival: the leader keeps one rival to race."""
    still = sorted((v for v in look if v.outcome == "open"),
                   key=lambda v: -v.p_better_by_margin(0.0))
    return [v.rival for v in still[1:] if v.p_better_by_margin(0.0) < level]


def winner_of(state: RaceState, history: Mapping[Hashable, Sequence[float]]) -> Hashable | None:
    """The race's winner: the lowest round-adjusted mean log cost
    (:func:`aoe_optuna.certify.blocks.round_adjusted_means`) among the candidates not
    found slower (the leader, its ties, its open rivals), each from all its re-timings;
    the leader where they have none."""
    if state.leader is None:
        return None
    survivors = [state.leader, *(c for c in state.verdicts
                                 if state.verdicts[c].outcome != "slower")]
    if state.means is not None:
        # read mid-round (another worker's race), some have no estimate yet: the ones
        # that do decide, and before the first complete round the leader stands
        scored = [c for c in survivors if c in state.means]
        return min(scored, key=lambda c: state.means[c]) if scored \
            else state.leader  # type: ignore[index]
    rows = [logs(history[c]) for c in survivors]
    if any(len(y) == 0 for y in rows):
        return state.leader
    means = round_adjusted_means(rows)
    return survivors[int(np.argmin(means))]


def _leader(active: Sequence[Hashable], history: Mapping[Hashable, Sequence[float]]
            ) -> Hashable:
    """The active candidate with the lowest mean log cost over the rounds all have."""
    n = min(len(history[c]) for c in active)
    if n == 0:
        return active[0]
    means = [float(logs(history[c][:n]).mean()) for c in active]
    return active[int(np.argmin(means))]


def _look(active: Sequence[Hashable], y: np.ndarray, rules: RaceRules, alpha: float,
          floor: float | None) -> list[Verdict]:
    """Every rival's verdict against the leader, from ``y`` (active x rounds log costs)."""
    n = y.shape[1]
    sigma, df = with_floor(*residual_sigma(y), floor)
    means = y.mean(axis=1)
    li = int(np.argmin(means))
    se = sigma * math.sqrt(2.0 / n) if math.isfinite(sigma) else math.inf
    q = quantile(1.0 - alpha, df) if math.isfinite(se) and se > 0 else 0.0
    out = []
    for j, c in enumerate(active):
        if j == li:
            continue
        d = float(means[j] - means[li])
        low, high = d - q * se, d + q * se
        outcome: Outcome = ("tied" if high < rules.margin
                            else "slower" if low > 0 else "open")
        out.append(Verdict(c, active[li], n, d, se, df, low, high, outcome))
    return out


def next_timings(state: RaceState, history: Mapping[Hashable, Sequence[float]]
                 ) -> list[Hashable]:
    """The active candidates to time next, in this round's interleaved order: the rest of
    a round cut short, else a whole new round, rotated by one each round so no candidate
    always runs first (or right after a slow one)."""
    if state.todo is not None:
        return [] if state.done else list(state.todo)
    if state.done or not state.active:
        return []
    active = list(state.active)
    r = max(len(history[c]) for c in active)
    due = [c for c in active if len(history[c]) < r]
    if not due:
        due, r = active, r + 1
    k = len(active)
    rotated = active[(r - 1) % k:] + active[:(r - 1) % k]
    return [c for c in rotated if c in due]


def winner_interval(costs: Sequence[float], confidence: float = DEFAULT_CONFIDENCE,
                    floor: float | None = None,
                    others: Sequence[Sequence[float]] = ()) -> tuple[float, float, float]:
    """(geometric mean, low, high) of one candidate's re-timed costs: a t interval on the
    log scale from the spread of its rounds around its mean, pooled with ``others`` (the
    other contenders' re-timings) and no lower than the floor. A single timing with no
    other spread and no floor is a point."""
    y = logs(costs)
    if len(y) == 0:
        return math.nan, math.nan, math.nan
    mean = float(y.mean())
    sigma, df = with_floor(*own_sigma([y, *(logs(o) for o in others)]), floor)
    if not math.isfinite(sigma):
        return math.exp(mean), math.exp(mean), math.exp(mean)
    half = quantile(0.5 + confidence / 2, df) * sigma / math.sqrt(len(y))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)
