"""A race's verdict in the study's terms: the winner trial, its tokens/s and interval,
its ties, the probability of a correct selection, the re-timings spent."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from optuna.trial import FrozenTrial

from aoe_optuna.certify.race import RaceState, race_state, winner_interval, winner_of
from aoe_optuna.study.race.record import RaceRecord


@dataclass(frozen=True)
class Certified:
    """What the study certifies: ``value`` and ``interval`` in the study's unit (tokens/s,
    higher is better); ``ties``: configs within epsilon of the winner, or not separated
    from it when the race's budget ran out (``open`` among them)."""

    winner: int
    value: float
    interval: tuple[float, float]
    first_value: float  # the winner's first measurement, as the search saw it
    ties: tuple[int, ...]
    open: tuple[int, ...]
    slower: tuple[int, ...]
    # None: not known (no race). The race's statement about its last leader; where the
    # survivors' best estimate is another config of the leader's tie set, that one wins
    pcs: float | None
    spent: int  # re-timings this race took
    rounds: int
    contenders: tuple[int, ...]
    epsilon: float
    done: bool
    reason: str

    @property
    def tie_set(self) -> tuple[int, ...]:
        return (self.winner, *self.ties)

    def describe(self, unit: str = "tokens/s") -> str:
        """One line: ``certified 85.61 tokens/s [85.40, 85.82] (trial 38); ties: 41, 57;
        P(correct selection within 1%) >= 0.97; race 20 re-timings, 4 rounds``."""
        lo, hi = self.interval
        ties = ", ".join(map(str, self.ties)) or "none"
        pcs = (f"P(correct selection within {self.epsilon:.0%}) not known yet"
               if self.pcs is None else
               f"P(correct selection within {self.epsilon:.0%}) >= {self.pcs:.2f}")
        state = "" if self.done else " (not finished: resume the study to finish it)"
        return (f"certified {self.value:.6g} {unit} [{lo:.6g}, {hi:.6g}] (trial {self.winner}"
                f", first measured {self.first_value:.6g}); ties within "
                f"{self.epsilon:.0%}: {ties}; {pcs}; race {self.spent} re-timings, "
                f"{self.rounds} rounds: {self.reason}{state}")

    def as_doc(self) -> dict:
        """What the knowledge base and the dashboard keep of it."""
        return {"winner": self.winner, "value": self.value, "interval": list(self.interval),
                "ties": list(self.ties), "open": list(self.open), "pcs": self.pcs,
                "spent": self.spent, "rounds": self.rounds, "epsilon": self.epsilon,
                "reason": self.reason}


def floor_of(record: RaceRecord) -> float | None:
    """The least noise of one re-timing's log cost: the median relative standard error
    its own repeats show (None where no re-timing kept its repeats)."""
    values = sorted(x for v in record.rel_se.values() for x in v if x == x and x > 0)
    return values[len(values) // 2] if values else None


def state_of(record: RaceRecord) -> RaceState:
    return race_state({c: record.costs[c] for c in record.contenders}, record.rules,
                      floor_of(record), [*record.failed, *record.retired], record.joined)


def certified_of(record: RaceRecord) -> Certified | None:
    """The verdict a stored race gives (None when every contender failed again)."""
    state = state_of(record)
    best = winner_of(state, {c: record.costs[c] for c in record.contenders})
    if best is None:
        return None
    w = int(best)  # type: ignore[call-overload]
    others = [record.costs[c] for c in record.contenders if c != w and c not in record.failed]
    slower = [*record.retired, *(int(c) for c in state.slower)]  # type: ignore[call-overload]
    mean, lo, hi = winner_interval(record.costs[w], record.rules.confidence,
                                   floor_of(record), others)
    if not math.isfinite(mean):  # not re-timed yet: its first timing
        mean = lo = hi = record.first[w]
    # the leader's ties and open rivals; where the survivors' best estimate is one of
    # them, it wins and the leader takes its place in the tie set
    # rivals still raced and not judged yet (the first rounds, or a late joiner's, are not
    # complete) are open: nothing bounds the chance they are faster
    unjudged = [c for c in state.active if c != state.leader and c not in state.verdicts]
    open_ = [int(c) for c in [*state.open, *unjudged] if c != w]  # type: ignore[call-overload]
    ties = [int(c) for c in [state.leader, *state.tied]  # type: ignore[call-overload]
            if c != w] + open_
    return Certified(
        winner=w, value=1.0 / mean, interval=(1.0 / hi, 1.0 / lo),
        first_value=1.0 / record.first[w], ties=tuple(ties), open=tuple(open_),
        slower=tuple(slower),
        pcs=None if unjudged else state.pcs(record.rules), spent=record.spent,
        rounds=state.rounds,
        contenders=tuple(record.contenders), epsilon=record.rules.epsilon,
        done=record.done, reason=record.reason)


def unraced(trials: Sequence[FrozenTrial], epsilon: float, reason: str,
            exact: bool) -> Certified | None:
    """The winner where there is no race: the best measurement. Its ties are the configs
    measured within epsilon of it when the figures are exact (a noise-free backend);
    otherwise nothing is known of them."""
    ok = [t for t in trials if t.value is not None and t.value > 0]
    if not ok:
        return None
    best = max(ok, key=lambda t: (float(t.value), -t.number))  # type: ignore[arg-type]
    value = float(best.value)  # type: ignore[arg-type]
    ties = tuple(t.number for t in sorted(ok, key=lambda t: -float(t.value))  # type: ignore[arg-type]
                 if exact and t.number != best.number
                 and float(t.value) * (1 + epsilon) >= value)  # type: ignore[arg-type]
    return Certified(best.number, value, (value, value), value, ties, (), (),
                     1.0 if exact else None, 0, 0, (best.number,), epsilon, True, reason)
