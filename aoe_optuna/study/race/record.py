"""A study's race as stored: its contenders, their re-timings round by round, its budget.

One study user attribute (``race``), rewritten after every re-timing. Costs are
seconds per token (1 / tokens/s), lower is better; round ``r`` of a contender is its
noise draw ``draw_base + r`` (the search's first timing was draw 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import optuna

from aoe_optuna.attrs import RACE_ATTR
from aoe_optuna.certify.race import RaceRules


@dataclass
class RaceRecord:
    after: int  # the search's measurements when the race began
    contenders: list[int]  # trial numbers, best first timing first
    first: dict[int, float]  # each contender's first cost
    budget: int  # re-timings it may spend
    rules: RaceRules
    draw_base: int = 1
    noise: float = 0.0  # the relative noise of one timing the contenders were chosen by
    costs: dict[int, list[float]] = field(default_factory=dict)
    rel_se: dict[int, list[float]] = field(default_factory=dict)  # per re-timing, nan: unknown
    failed: list[int] = field(default_factory=list)
    # rivals found slower before configs joined the race: out of it for good, so that the
    # race goes on among the leader, its ties and the joiners alone
    retired: list[int] = field(default_factory=list)
    # rounds of pairs: the round each config that joined the race late was first timed in
    joined: dict[int, int] = field(default_factory=dict)
    spent: int = 0
    earlier: int = 0  # re-timings earlier races of the study spent
    done: bool = False
    reason: str = "racing"
    heartbeat: str = ""

    def __post_init__(self) -> None:
        for c in self.contenders:
            self.costs.setdefault(c, [])
            self.rel_se.setdefault(c, [])

    @property
    def next_draw_base(self) -> int:
        """Where a later race's draws start: past every draw this one used."""
        return self.draw_base + max((len(v) for v in self.costs.values()), default=0)

    def add(self, trial: int, cost: float | None, rel_se: float | None) -> None:
        """One re-timing of ``trial``: its cost, or None when the run failed (the
        contender is then out of the race: a config that fails again is no winner)."""
        self.spent += 1
        if cost is None:
            self.failed.append(trial)
        else:
            self.costs[trial].append(float(cost))
            self.rel_se[trial].append(float("nan") if rel_se is None else float(rel_se))

    def as_attr(self) -> dict[str, Any]:
        r = self.rules
        return {
            "after": self.after, "contenders": self.contenders,
            "first": {str(k): v for k, v in self.first.items()},
            "budget": self.budget, "draw_base": self.draw_base, "noise": self.noise,
            "rules": {"epsilon": r.epsilon, "confidence": r.confidence,
                      "min_rounds": r.min_rounds, "max_rounds": r.max_rounds,
                      "park": r.park, "pairs": r.pairs},
            "costs": {str(k): v for k, v in self.costs.items()},
            "rel_se": {str(k): [None if x != x else x for x in v]
                       for k, v in self.rel_se.items()},
            "failed": self.failed, "retired": self.retired,
            "joined": {str(k): v for k, v in self.joined.items()}, "spent": self.spent,
            "earlier": self.earlier,
            "done": self.done, "reason": self.reason,
            "heartbeat": datetime.now(UTC).isoformat(timespec="seconds"),
        }

    @classmethod
    def from_attr(cls, raw: Any) -> RaceRecord | None:
        if not isinstance(raw, dict):
            return None
        try:
            # a race stored before parking (or rounds of pairs) existed replays as it
            # was run: no parking, every open rival each round
            rules = RaceRules(**{"park": 0.0, "pairs": False, **raw["rules"]})
            return cls(
                after=int(raw["after"]), contenders=[int(c) for c in raw["contenders"]],
                first={int(k): float(v) for k, v in raw["first"].items()},
                budget=int(raw["budget"]), rules=rules, draw_base=int(raw["draw_base"]),
                noise=float(raw.get("noise", 0.0)),
                costs={int(k): [float(x) for x in v] for k, v in raw["costs"].items()},
                rel_se={int(k): [float("nan") if x is None else float(x) for x in v]
                        for k, v in raw.get("rel_se", {}).items()},
                failed=[int(c) for c in raw.get("failed", [])],
                retired=[int(c) for c in raw.get("retired", [])],
                joined={int(k): int(v) for k, v in raw.get("joined", {}).items()},
                spent=int(raw["spent"]),
                earlier=int(raw.get("earlier", 0)), done=bool(raw["done"]),
                reason=str(raw.get("reason", "")), heartbeat=str(raw.get("heartbeat", "")),
            )
        except (KeyError, TypeError, ValueError):
            return None

    @classmethod
    def of(cls, study: optuna.Study) -> RaceRecord | None:
        return cls.from_attr(study.user_attrs.get(RACE_ATTR))

    def save(self, study: optuna.Study) -> None:
        study.set_user_attr(RACE_ATTR, self.as_attr())
