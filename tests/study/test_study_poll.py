"""The tests' poll of a study a run is still creating writes nothing to its file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import optuna

from tests.support.study_poll import stored_study


def test_a_poll_before_the_run_stored_its_study_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    url = f"sqlite:///{path}"
    assert stored_study(url, "s") is None and not path.exists()
    sqlite3.connect(path).close()  # the file a run has just made, no tables yet
    assert stored_study(url, "s") is None
    with sqlite3.connect(path) as db:  # no table was created by the poll
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == []
    optuna.create_study(study_name="s", storage=url)
    study = stored_study(url, "s")
    assert study is not None and study.study_name == "s"
    assert stored_study(url, "other") is None
