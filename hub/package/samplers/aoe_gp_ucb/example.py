"""GPUCBSampler on a plain Optuna study: floats, a log-float, a log-int, a categorical."""

import math

import optuna
import optunahub


def objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -5, 5)
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    width = trial.suggest_int("width", 8, 512, log=True)
    act = trial.suggest_categorical("act", ["relu", "gelu", "tanh"])
    return (x - 1.3) ** 2 + math.log10(lr / 3e-3) ** 2 + math.log2(width / 64) ** 2 + (
        0.0 if act == "gelu" else 0.5
    )


if __name__ == "__main__":
    module = optunahub.load_module("samplers/aoe_gp_ucb")
    study = optuna.create_study(sampler=module.GPUCBSampler(seed=0))
    study.optimize(objective, n_trials=40)
    print(study.best_value, study.best_params)
