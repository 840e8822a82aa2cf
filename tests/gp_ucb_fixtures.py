"""Small synthetic spaces and objectives for the GPUCBSampler tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import optuna

from aoe_optuna.space.constraints import compile_expression
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace

SIZES = (1, 2, 4, 8, 16, 32)
MODES = ("x", "y", "z")


def small_space() -> SearchSpace:
    """3 sizes x a category with one rule: 6*6*6*3 = 648 points, 540 feasible."""
    params = [Param.generic(n, SIZES) for n in "abc"] + [Param.generic("mode", MODES)]
    names: dict[str, float | None] = {"a": None, "b": None, "c": None, "mode": None}
    rule = compile_expression("a * b <= 128", names, {"mode": MODES}, name="ab")
    return SearchSpace(params, [rule])


def throughput(config: dict[str, Any]) -> float:
    """A smooth peak at a=16, b=4, c=4, mode=y (an interior point, not a corner)."""
    la, lb, lc = (np.log2(config[k]) for k in "abc")
    bump = np.exp(-((la - 4) ** 2) / 4 - (lb - 2) ** 2 / 3 - (lc - 2) ** 2 / 5)
    return float(100.0 * (bump + 0.05) * (1.0 if config["mode"] == "y" else 0.85))


def fails(config: dict[str, Any]) -> bool:
    """A hidden failure region, unknown to the space: c >= 16 crashes."""
    return config["c"] >= 16


def run(
    study: optuna.Study, space: SearchSpace, n: int, hidden_failures: bool = False
) -> list[dict[str, Any]]:
    """Ask/tell ``n`` trials; returns the configs asked, in order."""
    asked = []
    for _ in range(n):
        trial = study.ask(space.distributions())
        config = dict(trial.params)
        asked.append(config)
        if hidden_failures and fails(config):
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, throughput(config))
    return asked


def optimum(space: SearchSpace) -> float:
    return max(throughput(space.config(r)) for r in space.all_feasible())
