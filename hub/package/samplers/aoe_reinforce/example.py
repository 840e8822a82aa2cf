"""ReinforceSampler on a plain Optuna study: a categorical, ints, a log-int and a float."""

import math

import optuna
import optunahub


def objective(trial: optuna.Trial) -> float:
    layout = trial.suggest_categorical("layout", ["row", "col", "tiled"])
    unroll = trial.suggest_int("unroll", 1, 8)
    block = trial.suggest_int("block", 16, 1024, log=True)
    alpha = trial.suggest_float("alpha", 0.0, 1.0)
    return (
        (0.0 if layout == "tiled" else 0.5)
        + 0.05 * (unroll - 4) ** 2
        + math.log2(block / 128) ** 2 / 4
        + (alpha - 0.3) ** 2
    )


if __name__ == "__main__":
    module = optunahub.load_module("samplers/aoe_reinforce")
    study = optuna.create_study(sampler=module.ReinforceSampler(seed=0))
    study.optimize(objective, n_trials=60)
    print(study.best_value, study.best_params)
