"""Known test functions as OptunaHub benchmark problems (``optunahub.benchmarks.BaseProblem``).

The registry's own problems are fetched from GitHub by ``optunahub.load_module``,
and the suite runs without a network, so these are written against the same
base class: a problem is an Optuna objective that suggests its own search
space, sets its constraint values with ``Trial.set_constraint`` and knows its
optimum. They are discrete or mixed, the way tuning spaces are.
"""

from __future__ import annotations

import math
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optunahub.benchmarks import BaseProblem

MINIMIZE = [optuna.study.StudyDirection.MINIMIZE]


class IntRosenbrock(BaseProblem):
    """Rosenbrock's valley in 3-D on integers -8..8 (4913 points); 0 at (1, 1, 1)."""

    optimum = 0.0

    @property
    def search_space(self) -> dict[str, BaseDistribution]:
        return {f"x{i}": IntDistribution(-8, 8) for i in range(3)}

    @property
    def directions(self) -> list[optuna.study.StudyDirection]:
        return MINIMIZE

    def evaluate(self, params: dict[str, Any]) -> float:
        x = [params[f"x{i}"] for i in range(3)]
        return float(sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(2)))


class LogIntTiles(BaseProblem):
    """A tiling-like bowl: three log-int sizes and a categorical; minimum 0 at (64, 8, 256, 'b').

    Separable in log2 of the sizes, as a kernel's time is near its best tile.
    """

    optimum = 0.0

    @property
    def search_space(self) -> dict[str, BaseDistribution]:
        return {
            "m": IntDistribution(1, 1024, log=True),
            "k": IntDistribution(1, 64, log=True),
            "n": IntDistribution(1, 1024, log=True),
            "order": CategoricalDistribution(["a", "b", "c"]),
        }

    @property
    def directions(self) -> list[optuna.study.StudyDirection]:
        return MINIMIZE

    def evaluate(self, params: dict[str, Any]) -> float:
        return (
            math.log2(params["m"] / 64) ** 2
            + 2 * math.log2(params["k"] / 8) ** 2
            + math.log2(params["n"] / 256) ** 2
            + {"a": 3.0, "b": 0.0, "c": 1.5}[params["order"]]
        )


class GardnerConstrained(BaseProblem):
    """Gardner et al. (ICML 2014), the toy problem of constrained Bayesian optimisation.

    Minimise cos(2x) cos(y) + sin(x) over [0, 6]^2 subject to
    cos(x) cos(y) - sin(x) sin(y) <= -0.5; the unconstrained minima are infeasible.
    ``optimum`` is the best feasible value on the samplers' 33-point grid.
    """

    @property
    def search_space(self) -> dict[str, BaseDistribution]:
        return {"x": FloatDistribution(0, 6), "y": FloatDistribution(0, 6)}

    @property
    def directions(self) -> list[optuna.study.StudyDirection]:
        return MINIMIZE

    def evaluate(self, params: dict[str, Any]) -> float:
        x, y = params["x"], params["y"]
        return math.cos(2 * x) * math.cos(y) + math.sin(x)

    def evaluate_constraints(self, params: dict[str, Any]) -> dict[str, float]:
        x, y = params["x"], params["y"]
        return {"c": math.cos(x) * math.cos(y) - math.sin(x) * math.sin(y) + 0.5}

    @property
    def optimum(self) -> float:
        grid = [6 * i / 32 for i in range(33)]
        return min(self.evaluate({"x": x, "y": y}) for x in grid for y in grid
                   if self.evaluate_constraints({"x": x, "y": y})["c"] <= 0)
