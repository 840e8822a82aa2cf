"""ReinforceSampler on plain Optuna studies: no spec, no SearchSpace, any direction."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest
from optuna.trial import Trial, TrialState

from aoe_optuna.samplers.reinforce import ReinforceSampler
from aoe_optuna.samplers.reinforce._replay import ObservationCache, TrialRows

optuna.logging.set_verbosity(optuna.logging.WARNING)


def bowl(trial: Trial) -> float:
    """A 2 x 20 x 20 x 33-config landscape with its minimum at (b, 13, 4, 1.25)."""
    c = trial.suggest_categorical("c", ["a", "b"])
    n = trial.suggest_int("n", 1, 20)
    m = trial.suggest_int("m", 1, 512, log=True)
    x = trial.suggest_float("x", -5, 5)
    return (n - 13) ** 2 / 40 + math.log2(m / 4) ** 2 / 8 + (x - 1.25) ** 2 / 8 + (
        0.0 if c == "b" else 1.0)


def _best(sampler: optuna.samplers.BaseSampler, n_trials: int = 60) -> float:
    study = optuna.create_study(sampler=sampler)
    study.optimize(bowl, n_trials=n_trials)
    return study.best_value


def test_beats_random_sampling_on_a_plain_study() -> None:
    ours = [_best(ReinforceSampler(seed=s)) for s in range(4)]
    random = [_best(optuna.samplers.RandomSampler(seed=s)) for s in range(4)]
    assert np.mean(ours) < 0.6 * np.mean(random), (ours, random)


def test_floats_are_grid_values_and_never_repeated() -> None:
    study = optuna.create_study(sampler=ReinforceSampler(seed=0, float_grid_points=9))
    study.optimize(lambda t: (t.suggest_float("x", 0, 1) - 0.4) ** 2
                   + (t.suggest_float("y", 1e-3, 1, log=True) - 0.1) ** 2, n_trials=30)
    xs = {t.params["x"] for t in study.trials}
    assert xs <= {i / 8 for i in range(9)}
    ys = np.log10([t.params["y"] for t in study.trials]) * 8 / 3  # -8..0 on the grid
    assert np.allclose(ys, np.round(ys))
    configs = [(t.params["x"], t.params["y"]) for t in study.trials]
    assert len(set(configs)) == len(configs)


def test_the_direction_is_honoured() -> None:
    """Maximising f and minimising -f is one search: the same configs in the same order."""
    def run(direction: str, sign: float) -> list[dict]:
        study = optuna.create_study(direction=direction, sampler=ReinforceSampler(seed=3))
        study.optimize(lambda t: sign * bowl(t), n_trials=30)
        return [t.params for t in study.trials]

    assert run("minimize", 1.0) == run("maximize", -1.0)
    assert run("minimize", 1.0) != run("maximize", 1.0)


def test_failed_and_infeasible_trials_are_learnt_as_failures() -> None:
    """A plain study's FAIL, and a COMPLETE that broke a constraint, enter the replay as NaN."""
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for i in range(6):
        trial = study.ask({"n": optuna.distributions.IntDistribution(0, 9)})
        if i == 1:
            study.tell(trial, state=TrialState.FAIL)
            continue
        trial.set_constraint("budget", 1.0 if i == 2 else -1.0)
        study.tell(trial, float(i))
    space = ReinforceSampler()._space_for(study)
    assert space is not None
    observations = ObservationCache(TrialRows(space), maximize=False)(study.get_trials())
    values = {o.number: o.value for o in observations}
    assert math.isnan(values[1]) and math.isnan(values[2])
    assert values[0] > values[3] > values[4] > 0  # minimised: smaller values score higher


def test_constraints_func_is_stored_with_the_trial() -> None:
    sampler = ReinforceSampler(seed=0, constraints_func=lambda t: [t.params["n"] - 4.5])
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: float(t.suggest_int("n", 0, 9)), n_trials=5)
    for t in study.trials:
        assert t.constraints == {"0": t.params["n"] - 4.5}


def test_an_enqueued_trial_keeps_its_params_and_its_claim() -> None:
    study = optuna.create_study(sampler=ReinforceSampler(seed=0))
    study.optimize(lambda t: float(t.suggest_int("n", 0, 9)), n_trials=3)
    study.enqueue_trial({"n": 7})
    trial = study.ask()
    assert trial.params == {} or trial.params == {"n": 7}
    assert trial.suggest_int("n", 0, 9) == 7
    assert "aoe:claim" not in study._storage.get_trial(trial._trial_id).system_attrs


@pytest.mark.parametrize("name", ["float_grid_points", "int_grid_points"])
@pytest.mark.parametrize("points", [1, 0])
def test_bad_grid_size_is_one_line(name: str, points: int) -> None:
    with pytest.raises(ValueError, match=f"{name}: expected >= 2, got {points}"):
        ReinforceSampler(**{name: points})
