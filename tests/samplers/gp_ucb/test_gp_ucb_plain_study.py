"""GPUCBSampler on plain studies: reproducible, and floats come from the GP, not at random."""

from __future__ import annotations

from collections.abc import Callable

import optuna
import pytest
from optuna.trial import Trial

from aoe_optuna.samplers.gp_ucb import GPUCBSampler


def _mixed(trial: Trial) -> float:
    a = trial.suggest_float("a", 1, 9)
    b = trial.suggest_float("b", 1, 9, log=True)
    c = trial.suggest_float("c", 1, 9, step=1)
    d = trial.suggest_int("d", 1, 9)
    e = trial.suggest_int("e", 1, 9, log=True)
    f = trial.suggest_int("f", 1, 9, step=2)
    g = trial.suggest_categorical("g", range(1, 10))
    return a + b + c + d + e + f + g


def _run(seed: int, n: int = 15) -> list[dict]:
    study = optuna.create_study(sampler=GPUCBSampler(seed=seed, n_startup_trials=4))
    study.optimize(_mixed, n_trials=n)
    return [t.params for t in study.trials]


def test_reproducible_for_a_seed_and_different_across_seeds() -> None:
    """Optuna's test_reproducible, on the same mixed objective."""
    first = _run(1)
    assert first == _run(1)
    assert first != _run(2)


def test_floats_are_modelled_not_random() -> None:
    """After the start-up design, proposals come from the GP: the grid values, and they improve."""
    study = optuna.create_study(sampler=GPUCBSampler(seed=0, n_startup_trials=4))
    study.optimize(lambda t: (t.suggest_float("x", -5, 5) - 1.25) ** 2
                   + (t.suggest_float("y", 1e-3, 10, log=True) - 1.0) ** 2, n_trials=25)
    grid_x = {-5 + 10 * i / 32 for i in range(33)}
    assert all(any(abs(t.params["x"] - g) < 1e-9 for g in grid_x) for t in study.trials)
    assert study.best_value < 0.05
    random = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    random.optimize(lambda t: (t.suggest_float("x", -5, 5) - 1.25) ** 2
                    + (t.suggest_float("y", 1e-3, 10, log=True) - 1.0) ** 2, n_trials=25)
    assert study.best_value < random.best_value


def test_bad_grid_size_is_one_line() -> None:
    with pytest.raises(ValueError, match="search.float_grid_points: expected >= 2, got 1"):
        GPUCBSampler(search={"float_grid_points": 1})


def test_bad_failure_weighting_is_one_line() -> None:
    expected = "failures.weighting: expected one of 'auto', 'success', 'chance', 'gain', got 'ei'"
    with pytest.raises(ValueError, match=expected):
        GPUCBSampler(failures={"weighting": "ei"})


def test_bad_failure_model_is_one_line() -> None:
    with pytest.raises(ValueError, match="failures.model: expected one of 'auto', 'vote'"):
        GPUCBSampler(failures="gp")


def _tiled(trial: optuna.Trial) -> float:
    """A kernel whose threads x vector width must divide its tile; the best configs
    sit on that rule's edge (wide vectors over few threads)."""
    tile = trial.suggest_categorical("tile", [16, 32, 64, 128, 256])
    threads = trial.suggest_categorical("threads", [8, 16, 32, 64])
    width = trial.suggest_categorical("width", [1, 2, 4, 8])
    unroll = trial.suggest_int("unroll", 1, 8)
    if tile % (threads * width):
        raise RuntimeError("does not build")
    return width * tile / threads - (unroll - 5) ** 2


@pytest.mark.slow  # a GP-UCB study of its own, ~6 s of CPU
def test_a_plain_study_learns_a_divisibility_rule_from_its_failures() -> None:
    """P(success) as halfspaces (a plain study's default) stops proposing configs that
    break the rule; a vote of neighbouring outcomes keeps proposing some. Both weight
    UCB the same way here ("success"): the default "chance" weighting spends more
    failures at the rule's edge, where the optimum of a recorded GEMM lies
    (docs/benchmarks/recorded_spaces.md, "Plain Optuna studies")."""
    failed = {}
    for model in ("vote", "halfspaces"):
        failed[model] = 0
        for seed in range(3):
            study = optuna.create_study(direction="maximize", sampler=GPUCBSampler(
                seed=seed, failures={"model": model, "weighting": "success"}))
            study.optimize(_tiled, n_trials=40, catch=(RuntimeError,))
            failed[model] += sum(t.state == optuna.trial.TrialState.FAIL
                                 for t in study.trials[15:])
    assert failed["halfspaces"] < failed["vote"], failed


def test_gain_weighting_searches_through_failures_success_avoids_them() -> None:
    """Half the configs fail (odd x): "success" keeps to configs that run, "gain" less so."""
    def objective(trial: optuna.Trial) -> float:
        x, y = trial.suggest_int("x", 0, 15), trial.suggest_int("y", 0, 15)
        if x % 2:
            raise RuntimeError("does not build")
        return -((x - 9) ** 2) - (y - 7) ** 2

    failed = {}
    for weighting in ("success", "gain"):
        study = optuna.create_study(direction="maximize", sampler=GPUCBSampler(
            seed=0, failures={"weighting": weighting}))
        study.optimize(objective, n_trials=30, catch=(RuntimeError,))
        failed[weighting] = sum(t.state == optuna.trial.TrialState.FAIL for t in study.trials[10:])
    assert failed["success"] < failed["gain"], failed


def test_a_used_sampler_pickles_and_proposes_as_before() -> None:
    """Its caches of finished trials do not pickle; the copy refills them from storage."""
    import pickle

    sampler = GPUCBSampler(seed=3, n_startup_trials=4)
    study = optuna.create_study(sampler=sampler)
    study.optimize(_mixed, n_trials=8)
    copy = pickle.loads(pickle.dumps(sampler))
    twin = optuna.create_study(sampler=copy)
    for t in study.trials:
        twin.add_trial(t)
    assert study.ask().params == twin.ask().params


def test_halfspaces_only_where_every_parameter_is_discrete() -> None:
    """"auto" learns the halfspaces on a plain study of sizes; with a float parameter
    the failures need not form one convex region, and the vote stays."""
    def model_for(objective: Callable[[optuna.Trial], float]) -> bool:
        sampler = GPUCBSampler(seed=0, n_startup_trials=2)
        study = optuna.create_study(sampler=sampler)
        study.optimize(objective, n_trials=3)
        space = sampler._space_for(study)
        assert space is not None
        failures = sampler._failures_for(study, space)
        assert failures is not None
        return failures.model == "halfspaces"

    assert model_for(lambda t: t.suggest_int("tile", 16, 128, log=True)
                     + t.suggest_categorical("width", [1, 2, 4]))
    assert not model_for(lambda t: t.suggest_int("tile", 16, 128, log=True)
                         + t.suggest_float("alpha", 0.0, 1.0))
