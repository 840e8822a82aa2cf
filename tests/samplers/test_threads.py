"""One sampler called from several threads (``optimize(n_jobs=k)``) builds its state once.

Both samplers build their space, masks and caches lazily on the first trial of a
plain study; a second thread arriving while the first builds them found a half-set
state (``assert self._masker is not None``). The build here is slowed down so the
threads meet every time instead of once in a few hundred runs.
"""

from __future__ import annotations

import threading
import time

import optuna
import pytest

from aoe_optuna.samplers.gp_ucb import sampler as gp_module
from aoe_optuna.samplers.gp_ucb.sampler import GPUCBSampler
from aoe_optuna.samplers.reinforce import sampler as reinforce_module
from aoe_optuna.samplers.reinforce.sampler import ReinforceSampler


def _objective(trial: optuna.Trial) -> float:
    x = trial.suggest_int("x", 0, 15)
    y = trial.suggest_categorical("y", [1, 2, 4, 8])
    return float((x - 7) ** 2 + y)


def _slow(cls: type) -> type:
    class Slow(cls):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, **kwargs: object) -> None:
            time.sleep(0.3)  # another thread asks while this one builds
            super().__init__(*args, **kwargs)

    return Slow


@pytest.mark.parametrize("make", [
    lambda: ReinforceSampler(seed=0),
    lambda: GPUCBSampler(seed=0, n_startup_trials=2),
], ids=["reinforce", "gp-ucb"])
def test_threads_meeting_at_the_first_build_both_sample(
    make: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reinforce_module, "ChoiceMasker", _slow(reinforce_module.ChoiceMasker))
    monkeypatch.setattr(gp_module, "HistoryReader", _slow(gp_module.HistoryReader))
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(sampler=make())  # type: ignore[operator]
    study.enqueue_trial({"x": 3, "y": 2})
    study.enqueue_trial({"x": 9, "y": 4})
    study.optimize(_objective, n_trials=2)
    errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    study.optimize(_objective, n_trials=6, n_jobs=3, catch=())
    assert not errors
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 8
