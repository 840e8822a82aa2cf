"""Several worker processes on one study: exact budgets, no lock errors, kills survived."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from aoe_optuna.study.run.objective import count_measured, is_measured
from tests.support.pg_server import postgres_server, server_bin
from tests.support.study_poll import stored_study

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"


def _run(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(AOE_TUNE), *args, "--no-progress"], capture_output=True,
                          text=True, timeout=timeout)


def _check_study(url: str, name: str, n: int) -> list[optuna.trial.FrozenTrial]:
    study = optuna.load_study(study_name=name, storage=url)
    trials = study.get_trials()
    assert count_measured(trials) == n
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    locked = [t for t in trials if "locked" in str(t.user_attrs.get("failure_reason", ""))]
    assert locked == []
    return trials


@pytest.mark.slow
def test_eight_workers_on_sqlite_exact_budget_no_lock_errors(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    proc = _run(["--config", QWEN, "--storage", url, "--study-name", "w", "--n-trials", "40",
                 "--n-workers", "8", "--sampler", "random", "--seed", "0"])
    assert proc.returncode == 0, proc.stderr
    assert "database is locked" not in proc.stderr
    trials = _check_study(url, "w", 40)
    workers = Counter(t.user_attrs["worker"]["pid"] for t in trials if is_measured(t))
    assert len(workers) >= 2  # the work really was shared


@pytest.mark.slow
def test_journal_storage_with_workers(tmp_path: Path) -> None:
    log = str(tmp_path / "aoe.log")
    proc = _run(["--config", QWEN, "--storage", log, "--study-name", "j", "--n-trials", "16",
                 "--n-workers", "2", "--sampler", "random", "--seed", "1"])
    assert proc.returncode == 0, proc.stderr
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(log))
    _check_study(storage, "j", 16)


@pytest.mark.slow
def test_devices_pin_one_device_per_worker(tmp_path: Path) -> None:
    from aoe_optuna.study.run.worker_pool import worker_env

    assert worker_env(1, ["4", "5"])["ASCEND_RT_VISIBLE_DEVICES"] == "5"
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    proc = _run(["--config", QWEN, "--storage", url, "--study-name", "d", "--n-trials", "6",
                 "--devices", "0,1", "--sampler", "random", "--seed", "2"])
    assert proc.returncode == 0, proc.stderr
    assert "2 workers" in proc.stderr
    _check_study(url, "d", 6)


def _measured(url: str, name: str) -> int:
    study = stored_study(url, name)
    return 0 if study is None else count_measured(study.get_trials())


def _wait_for_progress(url: str, name: str, step: int, limit_s: float = 120) -> None:
    start = _measured(url, name)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and _measured(url, name) < start + step:
        time.sleep(0.1)


@pytest.mark.slow
def test_kill_all_workers_three_times_then_resume(tmp_path: Path) -> None:
    """Three kills of the parent and both workers at varying points (scripts/chaos.py
    runs hundreds, with pauses, on every storage)."""
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    n = 40
    args = ["--config", QWEN, "--storage", url, "--study-name", "k", "--n-trials", str(n),
            "--n-workers", "2", "--sampler", "random"]
    completed_before: dict[int, float] = {}
    for cycle in range(3):
        proc = subprocess.Popen([str(AOE_TUNE), *args, "--seed", str(cycle), "--no-progress"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        _wait_for_progress(url, "k", step=2 + cycle % 3)  # kill mid-run, at varying points
        os.killpg(proc.pid, signal.SIGKILL)  # the parent and both workers
        proc.wait()
        try:
            study = optuna.load_study(study_name="k", storage=url)
        except KeyError:
            continue  # killed before the study was created
        done = {t.number: t.value for t in study.get_trials(states=(TrialState.COMPLETE,))}
        for number, value in completed_before.items():  # nothing completed is ever lost
            assert done.get(number) == value
        completed_before = done
    proc = _run([*args, "--seed", "99"])
    assert proc.returncode == 0, proc.stderr
    trials = _check_study(url, "k", n)
    for number, value in completed_before.items():
        assert trials[number].value == value


@pytest.mark.slow
@pytest.mark.skipif(server_bin() is None, reason="no PostgreSQL server binaries on this machine")
def test_four_workers_on_postgresql(tmp_path: Path) -> None:
    with postgres_server() as url:
        # two "hosts": separate aoe-tune commands on the same study, 2 workers each
        first = _run(["--config", QWEN, "--storage", url, "--study-name", "pg",
                      "--n-trials", "1", "--sampler", "random", "--seed", "0"])
        assert first.returncode == 0, first.stderr
        procs = [
            subprocess.Popen([str(AOE_TUNE), "--storage", url, "--study-name", "pg",
                              "--n-trials", "24", "--n-workers", "2", "--sampler", "random",
                              "--seed", str(10 * h), "--no-progress"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for h in range(2)
        ]
        for p in procs:
            _, err = p.communicate(timeout=600)
            assert p.returncode == 0, err
        _check_study(url, "pg", 24)


def test_unreachable_postgresql_is_one_line(tmp_path: Path) -> None:
    proc = _run(["--config", QWEN, "--storage",
                 "postgresql+psycopg://postgres@127.0.0.1:1/aoe", "--n-trials", "3"],
                timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot open" in lines[0] and "Traceback" not in proc.stderr
