"""GPUCBSampler honours Optuna's constraints: ``constraints_func`` and ``Trial.set_constraint``."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import optuna
import pytest
from optuna.trial import FrozenTrial, Trial

from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.samplers.gp_ucb._history import read_history
from aoe_optuna.samplers.plain_space import PlainSpaces
from aoe_optuna.samplers.trial_constraints import breaks_a_constraint

optuna.logging.set_verbosity(optuna.logging.WARNING)

N_TRIALS = 30


def _value(x: int, y: int) -> float:
    """Best at (14, 14), which breaks x + y <= 16; the feasible best is (8, 8)."""
    return float((x - 14) ** 2 + (y - 14) ** 2)


def _by_func(trial: Trial) -> float:
    return _value(trial.suggest_int("x", 0, 20), trial.suggest_int("y", 0, 20))


def _by_set_constraint(trial: Trial) -> float:
    x, y = trial.suggest_int("x", 0, 20), trial.suggest_int("y", 0, 20)
    trial.set_constraint("sum", x + y - 16.0)
    return _value(x, y)


def _sum_constraint(t: FrozenTrial) -> list[float]:
    return [t.params["x"] + t.params["y"] - 16.0]


def _run(sampler: optuna.samplers.BaseSampler, objective: Callable[[Trial], float]
         ) -> optuna.Study:
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=N_TRIALS)
    return study


@functools.cache
def _blind(seed: int) -> optuna.Study:
    """The same search with the constraint not told (run once for both cases)."""
    return _run(GPUCBSampler(seed=seed), _by_func)


def _feasible_best(study: optuna.Study) -> float:
    return min(t.value for t in study.trials
               if t.params["x"] + t.params["y"] <= 16 and t.value is not None)


@pytest.mark.parametrize("how", ["constraints_func", "set_constraint"])
def test_constraints_steer_the_search_to_the_feasible_best(how: str) -> None:
    """With the constraint known, more proposals are feasible and the feasible best is better."""
    def ours(seed: int) -> optuna.Study:
        if how == "constraints_func":
            return _run(GPUCBSampler(seed=seed, constraints_func=_sum_constraint), _by_func)
        return _run(GPUCBSampler(seed=seed), _by_set_constraint)

    seeds = range(3)
    told = [ours(s) for s in seeds]
    blind = [_blind(s) for s in seeds]
    for study in told:
        assert all(t.constraints for t in study.trials)  # stored with every trial
    feasible_share = [np.mean([not breaks_a_constraint(t) for t in s.trials[8:]]) for s in told]
    blind_share = [np.mean([t.params["x"] + t.params["y"] <= 16 for t in s.trials[8:]])
                   for s in blind]
    assert np.mean(feasible_share) > np.mean(blind_share) + 0.2, (feasible_share, blind_share)
    assert np.mean([_feasible_best(s) for s in told]) < np.mean(
        [_feasible_best(s) for s in blind]), "the constraint did not help"
    best = [s.best_trial for s in told]  # Optuna's own best_trial keeps to feasible trials
    assert all(not breaks_a_constraint(t) for t in best)


def test_history_keeps_an_infeasible_value_for_the_gp_but_not_as_incumbent() -> None:
    study = optuna.create_study()
    for x, broken in [(1, True), (5, False), (9, False)]:
        study.enqueue_trial({"x": x})
        trial = study.ask({"x": optuna.distributions.IntDistribution(0, 9)})
        trial.set_constraint("c", 1.0 if broken else -1.0)
        study.tell(trial, float(-x))  # minimised: x=9 best, x=1 worst
    study.enqueue_trial({"x": 0})
    trial = study.ask({"x": optuna.distributions.IntDistribution(0, 9)})
    trial.set_constraint("c", 2.0)
    study.tell(trial, -100.0)  # the best value of all, but infeasible
    plain = PlainSpaces(float_points=33)(study)
    assert plain is not None
    history = read_history(study, plain.space)
    assert history.completed.shape[0] == 4  # all four values train the GP
    assert history.infeasible is not None and history.infeasible.tolist() == [True, False, False,
                                                                              True]
    assert history.all_failed[:, 0].tolist() == [1, 0]  # x=1 and x=0 count as failures
    assert history.completed_ok[:, 0].tolist() == [5, 9]
    assert history.incumbents(5)[:, 0].tolist() == [9, 5]
    assert np.isneginf(history.feasible_targets()[[0, 3]]).all()


def test_without_constraints_the_history_is_as_before() -> None:
    study = optuna.create_study()
    study.optimize(lambda t: float(t.suggest_int("x", 0, 9)), n_trials=4)
    plain = PlainSpaces(float_points=33)(study)
    assert plain is not None
    history = read_history(study, plain.space)
    assert history.infeasible is None
    assert history.all_failed is history.failed and history.completed_ok is history.completed
