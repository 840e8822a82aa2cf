"""A trial started by Optuna's ask names its worker, with a heartbeat, in its first write."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from aoe_optuna.study.storage.opening import open_storage
from aoe_optuna.study.trials.owned_birth import worker_identity


def _heartbeats(db: Path) -> set[int]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT trial_id FROM trial_heartbeats")}


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_new_trial_names_its_worker_as_it_is_created(tmp_path: Path, kind: str) -> None:
    url = f"sqlite:///{tmp_path / 'b.db'}" if kind == "sqlite" else str(tmp_path / "b.log")
    storage = open_storage(url)
    study = optuna.create_study(study_name="b", storage=storage)
    trial_id = storage.create_new_trial(study._study_id)  # what ask does, no sampler after
    assert storage.get_trial(trial_id).user_attrs["worker"] == worker_identity()
    if kind == "sqlite":
        assert _heartbeats(tmp_path / "b.db") == {trial_id}


def test_a_started_waiting_trial_names_its_worker_in_the_same_write(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    storage = open_storage(f"sqlite:///{db}")
    study = optuna.create_study(study_name="b", storage=storage)
    study.enqueue_trial({"x": 1.0})
    (waiting,) = study.get_trials(states=(TrialState.WAITING,))
    assert "worker" not in waiting.user_attrs and _heartbeats(db) == set()
    assert storage.set_trial_state_values(waiting._trial_id, TrialState.RUNNING)
    assert storage.get_trial(waiting._trial_id).user_attrs["worker"] == worker_identity()
    assert _heartbeats(db) == {waiting._trial_id}


def test_a_template_trial_and_the_proxy_servers_trials_are_left_as_given(
        tmp_path: Path) -> None:
    """The gRPC proxy's server creates trials for its clients: they are not its own."""
    storage = open_storage(f"sqlite:///{tmp_path / 'b.db'}")
    study = optuna.create_study(study_name="b", storage=storage)
    study.add_trial(optuna.trial.create_trial(value=1.0))
    assert "worker" not in study.get_trials()[0].user_attrs
    storage.owned_births = False
    trial_id = storage.create_new_trial(study._study_id)
    assert "worker" not in storage.get_trial(trial_id).user_attrs
