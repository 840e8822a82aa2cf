"""The race in aoe-tune processes of their own (forked with the modules loaded,
:mod:`tests.support.preloaded`): killed in the middle, the same command resumes it
with none of its re-timings lost; the summary and the export say what it certified."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import optuna
import pytest
from race_fixture import race_spec

from aoe_optuna.study.race.record import RaceRecord
from aoe_optuna.study.run.objective import count_measured
from tests.support.preloaded import aoe_tune_forked

pytestmark = pytest.mark.slow


def tune(spec: Path, db: Path, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("AOE_FAULT_AT", None)
    if fault is not None:
        env["AOE_FAULT_AT"] = fault
    return aoe_tune_forked(["--config", str(spec), "--storage", f"sqlite:///{db}",
                            "--study-name", "r", "--n-trials", "12", "--seed", "0",
                            "--sampler", "random", "--no-progress"], Path.cwd(), env)


def record(db: Path) -> RaceRecord:
    study = optuna.load_study(study_name="r", storage=f"sqlite:///{db}")
    got = RaceRecord.of(study)
    assert got is not None
    return got


def test_a_killed_race_resumes_and_ends_as_an_uninterrupted_one(tmp_path):
    spec = race_spec(tmp_path, {"budget": 1.0})
    whole = tune(spec, tmp_path / "whole.db")
    assert whole.returncode == 0, whole.stderr
    killed = tune(spec, tmp_path / "cut.db", fault="race:3")  # after its third re-timing
    assert killed.returncode == -9
    assert record(tmp_path / "cut.db").spent == 3 and not record(tmp_path / "cut.db").done
    resumed = tune(spec, tmp_path / "cut.db")
    assert resumed.returncode == 0, resumed.stderr
    assert "race: resuming after 3 of 12 re-timings" in resumed.stderr
    done, uncut = record(tmp_path / "cut.db"), record(tmp_path / "whole.db")
    assert done.done and done.costs == uncut.costs and done.spent == uncut.spent
    study = optuna.load_study(study_name="r", storage=f"sqlite:///{tmp_path / 'cut.db'}")
    assert count_measured(study.get_trials(deepcopy=False)) == 12  # the race added none
    for out in (whole.stdout, resumed.stdout):
        assert "certified: trial" in out and "95% interval" in out
        assert "P(correct selection within 1%) >= " in out
        assert f"race: {uncut.spent} re-timings (not counted in the measurements)" in out


def test_export_writes_the_certified_winner_its_ties_and_stamp(tmp_path):
    spec = race_spec(tmp_path, {"budget": 1.0})
    assert tune(spec, tmp_path / "e.db").returncode == 0
    kb = tmp_path / "kb.json"
    out = aoe_tune_forked(["export", "--storage", f"sqlite:///{tmp_path / 'e.db'}",
                           "--study-name", "r", "--kb", str(kb)], Path.cwd(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("winner: certified ")
    assert "ties within 1%" in out.stdout and "P(correct selection within 1%)" in out.stdout
    assert not kb.exists()  # a recorded space has no knowledge base entries
    study = optuna.load_study(study_name="r", storage=f"sqlite:///{tmp_path / 'e.db'}")
    stamp = study.user_attrs["environment"]
    assert stamp["backend"] == "replay" and stamp["project"].startswith("aoe_optuna ")
    assert json.dumps(stamp)
