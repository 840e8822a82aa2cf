"""A race in rounds of pairs: after its first rounds, the leader and one rival a round.

The first ``min_rounds`` rounds time every candidate (so does a candidate's first
``min_rounds`` rounds after it joins late, beside the leader). From then on a round
times the leader and the open rival most likely to be faster than it
(:func:`aoe_optuna.certify.allocation.most_ambiguous`), in an order that alternates,
so drift between rounds still cancels: a pair's difference is taken within its
rounds. A rival passed over is not dropped; it is timed again when it becomes the
most ambiguous.

After each complete round from ``min_rounds`` on (a look), every rival with at least
``min_rounds`` timings is judged against the leader as :mod:`.race` judges it (a t
interval on log costs, the error split over rivals and looks, tied under epsilon,
slower past zero); the estimates come from the least-squares fit of candidate plus
round over every timing taken (:func:`aoe_optuna.certify.blocks.block_fit`), the
noise from its residuals, never below the floor.

Which candidates a round times follows from the timings before it, so the state is
replayed from the history alone: the race resumes anywhere from what is stored.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

from aoe_optuna.certify.allocation import most_ambiguous
from aoe_optuna.certify.blocks import block_fit, quantile, with_floor
from aoe_optuna.certify.verdict import Outcome, RaceRules, RaceState, Verdict


class _Replay:
    """The race as it stood after its complete rounds: timings taken, verdicts, who
    is out."""

    def __init__(self, history: Mapping[Hashable, Sequence[float]], rules: RaceRules,
                 floor: float | None, failed: Sequence[Hashable],
                 joined: Mapping[Hashable, int]) -> None:
        self.order = list(history)
        self.history, self.rules, self.floor = history, rules, floor
        self.failed, self.joined = set(failed), joined
        self.taken: dict[Hashable, int] = dict.fromkeys(self.order, 0)
        self.obs: list[tuple[int, int, float]] = []  # (candidate index, round, log cost)
        self.out: set[Hashable] = set()  # failed, at the round they failed in
        self.verdicts: dict[Hashable, Verdict] = {}
        self.alpha = rules.test_alpha(len([c for c in self.order if c not in self.failed]) - 1)
        self.leader: Hashable | None = None
        self.means: dict[Hashable, float] = {}

    def active(self, r: int) -> list[Hashable]:
        """The leader and the open rivals that may be timed in round ``r``."""
        return [c for c in self.order if c not in self.out and self.joined.get(c, 0) <= r
                and (c not in self.verdicts or self.verdicts[c].outcome == "open")]

    def plan(self, r: int) -> list[Hashable]:
        """Round ``r``'s candidates, in its timing order."""
        active = self.active(r)
        new = [c for c in active if self.taken[c] < self.rules.min_rounds]
        if self.leader is None or self.leader not in active:
            chosen = active
        elif new:
            chosen = [c for c in active if c == self.leader or c in new]
        else:
            rivals = [c for c in active if c != self.leader]
            if not rivals:
                chosen = [self.leader]
            else:
                v = [self.verdicts[c] for c in rivals]
                pick = rivals[most_ambiguous([x.diff for x in v], [x.se for x in v])]
                chosen = [c for c in active if c in (self.leader, pick)]
        k = len(chosen)
        return chosen[r % k:] + chosen[:r % k] if k else []

    def take(self, r: int, plan: Sequence[Hashable]) -> list[Hashable]:
        """Consume round ``r``'s timings of ``plan``; the ones it still lacks (the
        round is in progress), or none when it is complete."""
        missing = []
        for c in plan:
            if self.taken[c] < len(self.history[c]):
                continue
            if c in self.failed:
                self.out.add(c)  # its re-timing in this round failed: out of the race
            else:
                missing.append(c)
        if missing:
            return missing
        for c in plan:
            if c not in self.out:
                y = math.log(self.history[c][self.taken[c]])
                self.obs.append((self.order.index(c), r, y))
                self.taken[c] += 1
        return []

    def look(self, n_round: int) -> None:
        """Fit the timings so far, name the leader and judge its rivals."""
        obs = [o for o in self.obs if self.order[o[0]] not in self.out]
        if not obs:
            return
        cands, rounds, y = zip(*obs, strict=True)
        fit = block_fit(len(self.order), cands, rounds, y)
        self.means = {c: float(fit.mu[i]) for i, c in enumerate(self.order)
                      if math.isfinite(fit.mu[i]) and c not in self.out}
        active = [c for c in self.active(n_round) if c in self.means]
        if not active:
            return
        li = min(active, key=lambda c: self.means[c])
        self.leader = li
        self.verdicts.pop(li, None)  # a rival once, it leads now
        if n_round < self.rules.min_rounds:
            return
        sigma, df = with_floor(fit.sigma, fit.df, self.floor)
        lead = self.order.index(li)
        for c in active:
            if c == li or self.taken[c] < self.rules.min_rounds:
                continue
            j = self.order.index(c)
            se = fit.diff_se(j, lead, sigma) if math.isfinite(sigma) else math.inf
            d = self.means[c] - self.means[li]
            q = quantile(1.0 - self.alpha, df) if math.isfinite(se) and se > 0 else 0.0
            low, high = (d - q * se, d + q * se) if math.isfinite(se) else (-math.inf, math.inf)
            outcome: Outcome = ("tied" if high < self.rules.margin
                                else "slower" if low > 0 else "open")
            self.verdicts[c] = Verdict(c, li, self.taken[c], d, se, df, low, high, outcome)


def pairs_state(history: Mapping[Hashable, Sequence[float]], rules: RaceRules,
                floor: float | None, failed: Sequence[Hashable],
                joined: Mapping[Hashable, int]) -> RaceState:
    """Replay the rounds of ``history`` (each candidate's re-timings in the order taken;
    ``failed``: those whose last re-timing failed; ``joined``: the first round of a
    candidate that joined late) and say where the race stands."""
    race = _Replay(history, rules, floor, failed, joined)
    if not race.order:
        return RaceState(None, (), {}, 0, True, "no candidate", todo=())
    r, todo = 0, ()
    while r < rules.max_rounds:
        active = race.active(r)
        if len(active) == 1 and race.taken[active[0]] >= rules.min_rounds \
                and r >= rules.min_rounds:
            break
        if not active:
            break
        plan = race.plan(r)
        missing = race.take(r, plan)
        if missing:
            todo = tuple(c for c in plan if c in missing)
            break
        r += 1
        race.look(r)
    active = race.active(r)
    leader = race.leader if race.leader in active else (active[0] if active else None)
    verdicts = {c: v for c, v in race.verdicts.items() if c != leader and c not in race.out}
    if leader is None:
        return RaceState(None, (), verdicts, r, True, "no candidate", todo=())
    rivals = [c for c in active if c != leader]
    if not todo and rivals and r < rules.max_rounds:
        todo = tuple(race.plan(r))
    if not rivals:
        done = race.taken[leader] >= rules.min_rounds
        k0 = len([c for c in race.order if c not in race.failed])
        reason = ("no rival" if k0 == 1 else "every rival decided") if done \
            else "timing the winner"
        if not done and not todo:
            todo = (leader,)
        return RaceState(leader, tuple(active), verdicts, r, done, reason,
                         todo=() if done else todo, next_round=r, means=race.means)
    at_max = r >= rules.max_rounds
    reason = f"at its limit of {rules.max_rounds} rounds" if at_max else "racing"
    return RaceState(leader, tuple(active), verdicts, r, at_max, reason,
                     todo=() if at_max else todo, next_round=r, means=race.means)
