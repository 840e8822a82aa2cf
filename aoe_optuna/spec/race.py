"""The spec's ``race`` section: how a study certifies its winner after the search.

Keys (all optional)::

    "race": {"epsilon": 0.01,      // configs within 1% of each other tie
             "confidence": 0.95,   // every statement of the race holds together at 95%
             "budget": 0.2,        // re-timings: at most 20% of the search's measurements
             "contenders": 5,      // configs raced at most
             "allocation": "pairs", // after two rounds of all, each round times the
                                   // leader and the rival likeliest to beat it;
                                   // "rounds": every open rival, each round
             "park": 0.2,          // with "rounds": stop timing a rival less likely
                                   // than this to be faster than the leader (it stays
                                   // in the tie set)
             "patience": null}     // end the search after this many measurements in a
                                   // row that beat the best by no more than epsilon

The race itself: :mod:`aoe_optuna.study.race`; its statistics:
:mod:`aoe_optuna.certify.race`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from aoe_optuna.certify.contenders import MAX_CONTENDERS
from aoe_optuna.certify.race import (
    DEFAULT_CONFIDENCE,
    DEFAULT_EPSILON,
    DEFAULT_PARK,
    MAX_ROUNDS,
    MIN_ROUNDS,
    RaceRules,
)
from aoe_optuna.spec.format import Section

KEYS = ("epsilon", "confidence", "budget", "contenders", "allocation", "park", "patience")
ALLOCATIONS = ("pairs", "rounds")
DEFAULT_ALLOCATION = "pairs"
DEFAULT_BUDGET = 0.2


@dataclass(frozen=True)
class RaceSettings:
    """A study's race: its rules, its share of the search's measurements, its field."""

    epsilon: float = DEFAULT_EPSILON
    confidence: float = DEFAULT_CONFIDENCE
    budget: float = DEFAULT_BUDGET
    contenders: int = MAX_CONTENDERS
    patience: int | None = None
    park: float = DEFAULT_PARK
    allocation: str = DEFAULT_ALLOCATION

    def measurements(self, searched: int) -> int:
        """The race's re-timing budget after ``searched`` measurements."""
        return int(math.floor(self.budget * searched + 1e-9))

    def rules(self, budget: int, contenders: int) -> RaceRules:
        """The race's rules for ``contenders`` raced on ``budget`` re-timings: its looks
        run from the first at which a difference has an estimate of its noise to the last
        round the budget pays for (two candidates a round, at least)."""
        per_round = 2 if contenders >= 2 else 1
        rounds = max(MIN_ROUNDS, min(MAX_ROUNDS, budget // per_round))
        return RaceRules(self.epsilon, self.confidence, MIN_ROUNDS, rounds, self.park,
                         pairs=self.allocation == "pairs")

    def as_doc(self) -> dict[str, Any]:
        """The canonical form; ``park`` and ``allocation`` only where they are not the
        default, so a study made with a race section before the keys existed is the same
        study."""
        doc = asdict(self)
        if doc["park"] == DEFAULT_PARK:
            del doc["park"]
        if doc["allocation"] == DEFAULT_ALLOCATION:
            del doc["allocation"]
        return doc


def parse_race(section: Section) -> RaceSettings:
    section.check_keys(KEYS)
    epsilon = section.number("epsilon", DEFAULT_EPSILON, low=0.0, high=0.5)
    confidence = section.number("confidence", DEFAULT_CONFIDENCE, low=0.5, high=0.999)
    budget = section.number("budget", DEFAULT_BUDGET, low=0.0, high=10.0)
    contenders = section.integer("contenders", MAX_CONTENDERS, 1, 50)
    patience = section.integer("patience", 1, 1, 1_000_000) if section.has("patience") \
        else None
    park = section.number("park", DEFAULT_PARK, low=0.0, high=0.49)
    assert epsilon is not None and confidence is not None and budget is not None
    assert park is not None
    allocation = section.string("allocation", DEFAULT_ALLOCATION, ALLOCATIONS)
    if confidence >= 1 or confidence <= 0.5:
        raise section.error("confidence", "a number above 0.5 and below 1", confidence)
    return RaceSettings(epsilon, confidence, budget, contenders, patience, park, allocation)
