"""A worker paused past the heartbeat's grace, then continued, loses nothing.

Real ``aoe-tune`` processes on real storages; the worker stops itself with
SIGSTOP at a named fault point (aoe_optuna/study/trials/fault_points.py), so the pause
lands on the same write every run, and the test continues it with SIGCONT.
``AOE_HEARTBEAT_S=1`` makes Optuna's heartbeat grace 4 s instead of 20 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_LATE_RESULT_OF, RETRY_HISTORY_KEY
from aoe_optuna.study.run.objective import count_measured, is_measured
from aoe_optuna.study.storage.opening import open_storage
from tests.study.stopped import wait_stopped

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "studies" / "qwen25_7b_decode_910b2.json"  # simulator: measurements are instant
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"
HEARTBEAT_S = 1
GRACE_S = 4 * HEARTBEAT_S

pytestmark = pytest.mark.slow  # a few aoe-tune processes and a pause past the grace: ~30 s


def _start(url: str, n: int, out: Path, pause_at: str | None = None,
           progress: bool = False) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AOE_FAULT")}
    env["AOE_HEARTBEAT_S"] = str(HEARTBEAT_S)
    env["PYTHONUNBUFFERED"] = "1"
    if pause_at is not None:
        env["AOE_FAULT_AT"] = pause_at
        env["AOE_FAULT_SIGNAL"] = "SIGSTOP"
    args = [str(AOE_TUNE), "--config", str(SPEC), "--storage", url, "--study-name", "pw",
            "--n-trials", str(n), "--sampler", "random", "--seed", str(sum(map(ord, out.name)))]
    if not progress:
        args.append("--no-progress")
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=out.open("w"),
                            text=True, env=env)


def _trials(url: str) -> list[FrozenTrial]:
    storage = open_storage(url)
    try:
        return optuna.load_study(study_name="pw", storage=storage).get_trials()
    finally:
        engine = getattr(storage, "engine", None)
        if engine is not None:
            engine.dispose()


def _paused_trial(url: str, pid: int) -> FrozenTrial:
    held = [t for t in _trials(url) if t.state == TrialState.RUNNING
            and (t.user_attrs.get("worker") or {}).get("pid") == pid]
    assert len(held) == 1, held
    return held[0]


def _check_study(url: str, n: int) -> list[FrozenTrial]:
    trials = _trials(url)
    assert count_measured(trials) == n
    assert not [t.number for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    configs = [tuple(sorted(t.params.items())) for t in trials if is_measured(t)]
    assert len(configs) == len(set(configs)), "a config was measured twice"
    return trials


def test_result_stored_before_the_pause_is_kept_and_the_worker_goes_on(tmp_path: Path) -> None:
    """Paused in its tell: the heartbeat completes the trial with its stored result; the
    continued worker says so in one line and stops cleanly."""
    url, n = f"sqlite:///{tmp_path / 'pw.db'}", 10
    paused = _start(url, n, tmp_path / "a.err", pause_at="tell:3")
    try:
        wait_stopped(paused)
        held = _paused_trial(url, paused.pid)
        assert held.user_attrs.get("measured") is True
        other = _start(url, n, tmp_path / "b.err")
        assert other.wait(timeout=120) == 0, (tmp_path / "b.err").read_text()
    finally:
        paused.send_signal(signal.SIGCONT)
    assert paused.wait(timeout=60) == 0
    err = (tmp_path / "a.err").read_text()
    assert "Traceback" not in err and "Traceback" not in (tmp_path / "b.err").read_text()
    assert (f"trial {held.number} was ended by another worker while this one was paused; "
            "its stored result is kept") in err
    trials = _check_study(url, n)
    kept = trials[held.number]
    assert kept.state == TrialState.COMPLETE and kept.value == held.user_attrs["tokens_per_s"]


def test_measurement_finished_after_the_trial_failed_goes_to_its_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paused before measuring: the heartbeat fails the trial and enqueues its config; the
    continued worker's measurement becomes that retry's, so the config is measured once."""
    url, n = f"sqlite:///{tmp_path / 'pw.db'}", 6
    paused = _start(url, n, tmp_path / "a.err", pause_at="measure:3")
    try:
        wait_stopped(paused)
        held = _paused_trial(url, paused.pid)
        time.sleep(GRACE_S + 1)
        # What any other worker does before its next trial, with the same grace.
        monkeypatch.setenv("AOE_HEARTBEAT_S", str(HEARTBEAT_S))
        storage = open_storage(url)
        optuna.storages.fail_stale_trials(optuna.load_study(study_name="pw", storage=storage))
        storage.engine.dispose()
    finally:
        paused.send_signal(signal.SIGCONT)
    assert paused.wait(timeout=60) == 0, (tmp_path / "a.err").read_text()
    err = (tmp_path / "a.err").read_text()
    assert "Traceback" not in err
    trials = _check_study(url, n)
    assert trials[held.number].state == TrialState.FAIL
    assert not is_measured(trials[held.number])
    retry = next(t for t in trials if t.system_attrs.get(RETRY_HISTORY_KEY) == [held.number])
    assert (f"trial {held.number} was ended by another worker while this one was paused; "
            f"its measurement is kept as trial {retry.number}") in err
    assert retry.state == TrialState.COMPLETE and retry.params == held.params
    assert retry.user_attrs[ATTR_LATE_RESULT_OF] == held.number
    assert retry.value == retry.user_attrs["tokens_per_s"]


def test_progress_line_names_the_stopped_worker_on_a_journal(tmp_path: Path) -> None:
    """No heartbeat on a Journal file: the other worker waits for the stopped one, names
    it, and both finish once it is continued."""
    url, n = str(tmp_path / "pw.log"), 6
    paused = _start(url, n, tmp_path / "a.err", pause_at="tell:3")
    other_err = tmp_path / "b.err"
    try:
        wait_stopped(paused)
        held = _paused_trial(url, paused.pid)
        other = _start(url, n, other_err, progress=True)
        want = f"trial {held.number} RUNNING"
        deadline = time.monotonic() + 90
        while not any(want in line and f"pid {paused.pid} on" in line and "(stopped)" in line
                      for line in other_err.read_text().splitlines()):
            assert other.poll() is None, other_err.read_text()
            assert time.monotonic() < deadline, other_err.read_text()
            time.sleep(0.5)
    finally:
        paused.send_signal(signal.SIGCONT)
    assert paused.wait(timeout=60) == 0
    assert other.wait(timeout=60) == 0
    assert "Traceback" not in (tmp_path / "a.err").read_text() + other_err.read_text()
    trials = _check_study(url, n)
    assert trials[held.number].state == TrialState.COMPLETE
