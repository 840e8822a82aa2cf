"""What a race is judged by: its rules, a rival's verdict at a look, the race's state.

Shared by the two ways a race spends its rounds (:mod:`.race`: every open rival each
round; :mod:`.pairs`: the leader and its most ambiguous rival).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from aoe_optuna.certify.blocks import cdf

Outcome = Literal["slower", "tied", "open"]
DEFAULT_EPSILON = 0.01
DEFAULT_CONFIDENCE = 0.95
MIN_ROUNDS = 2
MAX_ROUNDS = 10
DEFAULT_PARK = 0.2


@dataclass(frozen=True)
class RaceRules:
    """What decides a race: the tie margin, the family's confidence, its rounds."""

    epsilon: float = DEFAULT_EPSILON
    confidence: float = DEFAULT_CONFIDENCE
    min_rounds: int = MIN_ROUNDS
    max_rounds: int = MAX_ROUNDS
    park: float = DEFAULT_PARK  # 0: every open rival is timed to the end
    # after the first rounds, each round times the leader and its most ambiguous rival
    # (:mod:`.allocation`); False: every open rival, each round, and parking
    pairs: bool = False

    def __post_init__(self) -> None:
        if not (0 <= self.epsilon < 1 and 0 < self.confidence < 1
                and 1 <= self.min_rounds <= self.max_rounds and 0 <= self.park < 0.5):
            raise ValueError(f"inconsistent race rules {self}")

    @property
    def looks(self) -> int:
        return self.max_rounds - self.min_rounds + 1

    @property
    def margin(self) -> float:
        """epsilon on the log scale."""
        return math.log1p(self.epsilon)

    def test_alpha(self, rivals: int) -> float:
        """Each one-sided statement's error: ``1 - confidence`` split over rivals x looks."""
        return (1.0 - self.confidence) / (max(rivals, 1) * self.looks)


@dataclass(frozen=True)
class Verdict:
    """One rival against the leader at a look: mean log(rival / leader), its interval."""

    rival: Hashable
    leader: Hashable
    rounds: int
    diff: float
    se: float
    df: int
    low: float
    high: float
    outcome: Outcome

    def p_better_by_margin(self, margin: float) -> float:
        """Chance that the rival is truly faster than the leader by more than ``margin``
        (log scale), read off the difference's t distribution."""
        if self.se <= 0:
            return 0.0 if self.diff + margin > 0 else 1.0
        return cdf(-(self.diff + margin) / self.se, self.df)


@dataclass(frozen=True)
class RaceState:
    """Where a race stands: who leads, who is still raced, each rival's last verdict."""

    leader: Hashable | None
    active: tuple[Hashable, ...]  # the leader and the open rivals, in contender order
    verdicts: dict[Hashable, Verdict]  # each rival's deciding (or latest) verdict
    rounds: int  # complete rounds of the active candidates
    done: bool
    reason: str
    parked: tuple[Hashable, ...] = ()  # open rivals no longer timed (unlikely faster)
    # rounds of pairs: the timings the round in progress (or the next) still needs, in
    # its order; its index; each candidate's round-adjusted mean log cost
    todo: tuple[Hashable, ...] | None = None
    next_round: int = 0
    means: Mapping[Hashable, float] | None = None

    @property
    def tied(self) -> list[Hashable]:
        return [c for c, v in self.verdicts.items() if v.outcome == "tied"]

    @property
    def slower(self) -> list[Hashable]:
        return [c for c, v in self.verdicts.items() if v.outcome == "slower"]

    @property
    def open(self) -> list[Hashable]:
        return [c for c, v in self.verdicts.items() if v.outcome == "open"]

    def pcs(self, rules: RaceRules) -> float:
        """A lower bound (Bonferroni) on the probability that no rival is faster than the
        winner by more than epsilon: the probability of a correct selection within the
        indifference zone."""
        if self.leader is None:
            return 0.0
        miss = sum(v.p_better_by_margin(rules.margin) for v in self.verdicts.values())
        return max(0.0, 1.0 - miss)


def logs(costs: Sequence[float]) -> np.ndarray:
    return np.log(np.asarray(costs, dtype=float))
