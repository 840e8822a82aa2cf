"""Both samplers on OptunaHub-style benchmark problems, against random sampling.

Each problem (tests/hub/problems.py) is an ``optunahub.benchmarks.BaseProblem``,
run as Optuna users run one: ``study.optimize(problem, ...)``, constraints set by
the problem itself. The figure is the regret of the best feasible value after
``N_TRIALS`` trials, averaged over the fixed seeds; each sampler must reach at
most ``MARGIN`` times random sampling's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import optuna
import pytest

pytest.importorskip("optunahub")

from aoe_optuna.samplers.gp_ucb import GPUCBSampler  # noqa: E402
from aoe_optuna.samplers.reinforce import ReinforceSampler  # noqa: E402
from tests.hub.problems import GardnerConstrained, IntRosenbrock, LogIntTiles  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)

N_TRIALS = 60
SEEDS = (0, 1, 2)
MARGIN = 0.25
PROBLEMS = {"int-rosenbrock": IntRosenbrock, "log-int-tiles": LogIntTiles,
            "gardner-constrained": GardnerConstrained}
SAMPLERS: dict[str, Callable[[int], optuna.samplers.BaseSampler]] = {
    "gp-ucb": lambda seed: GPUCBSampler(seed=seed),
    "reinforce": lambda seed: ReinforceSampler(seed=seed),
    "random": lambda seed: optuna.samplers.RandomSampler(seed=seed),
}


@functools.cache
def mean_regret(problem: str, sampler: str) -> float:
    """Best feasible value minus the optimum, averaged over SEEDS."""
    made = PROBLEMS[problem]()
    regrets = []
    for seed in SEEDS:
        study = optuna.create_study(directions=made.directions, sampler=SAMPLERS[sampler](seed))
        study.optimize(made, n_trials=N_TRIALS)
        feasible = [t.value for t in study.trials if t.value is not None
                    and all(c <= 0 for c in t.constraints.values())]
        assert feasible, f"{sampler} found no feasible trial on {problem}"
        regrets.append(min(feasible) - made.optimum)
    return float(np.mean(regrets))


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["gp-ucb", "reinforce"])
@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_beats_random_sampling_by_a_margin(problem: str, sampler: str) -> None:
    ours, random = mean_regret(problem, sampler), mean_regret(problem, "random")
    assert random > 0, "random sampling found the optimum: the problem is too easy"
    assert ours <= MARGIN * random, f"{sampler} regret {ours:.3g}, random {random:.3g}"


def test_the_problems_state_their_optimum() -> None:
    """Each optimum is a value the problem reaches on the grid the samplers search."""
    assert IntRosenbrock().evaluate({"x0": 1, "x1": 1, "x2": 1}) == IntRosenbrock.optimum
    assert LogIntTiles().evaluate({"m": 64, "k": 8, "n": 256, "order": "b"}) == 0.0
    gardner = GardnerConstrained()
    grid = [6 * i / 32 for i in range(33)]
    unconstrained = min(gardner.evaluate({"x": x, "y": y}) for x in grid for y in grid)
    assert unconstrained < gardner.optimum - 0.1  # the constraint cuts off the best values
    study = optuna.create_study()
    study.optimize(gardner, n_trials=3)
    assert all(set(t.constraints) == {"c"} for t in study.trials)  # set by the problem itself
