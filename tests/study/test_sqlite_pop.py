"""An enqueued trial is started by one worker only, on a real SQLite file shared by processes."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import optuna
import pytest
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState

from aoe_optuna.study.storage.opening import open_storage

N_TRIALS = 200
N_WORKERS = 4


def _pop_all(url: str, out: mp.Queue) -> None:
    """Start enqueued trials as ``Study.ask`` does, until none is left."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    started = []
    while (trial_id := study._pop_waiting_trial_id()) is not None:
        started.append(trial_id)
    out.put(started)


@pytest.mark.slow  # racing worker processes, ~15 s of CPU
@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_each_enqueued_trial_is_started_once_by_racing_workers(tmp_path: Path) -> None:
    """Optuna's read-check-write let 19-27 of 300 trials start twice with 4 workers."""
    url = f"sqlite:///{tmp_path / 'race.db'}"
    study = optuna.create_study(study_name="s", storage=open_storage(url))
    for k in range(N_TRIALS):
        study.enqueue_trial({"x": k})
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    workers = [ctx.Process(target=_pop_all, args=(url, out)) for _ in range(N_WORKERS)]
    for w in workers:
        w.start()
    started = [t for _ in workers for t in out.get(timeout=120)]
    for w in workers:
        w.join(timeout=60)
    assert sorted(started) == sorted({t._trial_id for t in study.trials})
    assert all(t.state == TrialState.RUNNING for t in study.trials)


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_starting_a_running_or_finished_trial_answers_as_optuna_does(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:///{tmp_path / 'one.db'}")
    study = optuna.create_study(storage=storage)
    study.enqueue_trial({"x": 1})
    trial_id = study.trials[0]._trial_id
    assert storage.set_trial_state_values(trial_id, TrialState.RUNNING) is True
    assert study.trials[0].datetime_start is not None
    assert storage.set_trial_state_values(trial_id, TrialState.RUNNING) is False
    storage.set_trial_state_values(trial_id, TrialState.COMPLETE, [1.0])
    with pytest.raises(UpdateFinishedTrialError):
        storage.set_trial_state_values(trial_id, TrialState.RUNNING)
