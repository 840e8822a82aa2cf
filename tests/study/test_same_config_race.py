"""Two trials with the same config that check each other in the worst order: measured once.

Real ``aoe-tune`` processes on a real SQLite file. A worker stops itself with
SIGSTOP at a named fault point (aoe_optuna/study/trials/fault_points.py) and the test
continues it with SIGCONT, so the interleaving is the same on every run
instead of one that heavy load produces now and then. ``--sampler random``
claims nothing (aoe_optuna/samplers/claims.py): only the objective's own
guard stands between two workers and a config measured twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_HELD_BY
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.objective import TuningObjective, is_measured
from tests.study.stopped import wait_stopped

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "studies" / "qwen25_7b_decode_910b2.json"  # simulator: measurements are instant
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"
SEED = 1  # both workers: the same first random config, a feasible one
NAME = "race"

pytestmark = pytest.mark.slow  # three aoe-tune processes, each stopped once: ~15 s


def _start(url: str, n: int, pause_at: str, err: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AOE_FAULT")}
    env.update(AOE_FAULT_AT=pause_at, AOE_FAULT_SIGNAL="SIGSTOP",
               AOE_HEARTBEAT_S="60")  # a stopped worker's trial is not stale for 4 minutes
    return subprocess.Popen(
        [str(AOE_TUNE), "--config", str(SPEC), "--storage", url, "--study-name", NAME,
         "--n-trials", str(n), "--sampler", "random", "--seed", str(SEED), "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=err.open("w"), env=env)


def _trials(url: str) -> list[FrozenTrial]:
    return optuna.load_study(study_name=NAME, storage=url).get_trials()


def _wait_finished(url: str, number: int, timeout: float = 120.0) -> FrozenTrial:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        trial = _trials(url)[number]
        if trial.state.is_finished():
            return trial
        time.sleep(0.1)
    raise AssertionError(f"trial {number} never finished")


def _measured_configs(url: str) -> list[tuple[tuple[str, Any], ...]]:
    return [tuple(sorted(t.params.items())) for t in _trials(url) if is_measured(t)]


def _exit_cleanly(proc: subprocess.Popen, err: Path) -> None:
    assert proc.wait(timeout=120) == 0, err.read_text()[-2000:]
    assert "Traceback" not in err.read_text()


def test_a_sampled_config_checked_after_a_later_trial_measured_it_is_not_measured(
        tmp_path: Path) -> None:
    """Trial 1 is created first but writes its config last: trial 2 (same config) saw
    nothing and measures; trial 1 must stand down although trial 2 is numbered later."""
    url = f"sqlite:///{tmp_path / 'race.db'}"
    early = _start(url, 3, "ask:2", tmp_path / "early.err")  # baseline done; trial 1 asked
    late: subprocess.Popen | None = None
    try:
        wait_stopped(early)
        late = _start(url, 3, "measure:1", tmp_path / "late.err")  # trial 2: checked, not yet
        wait_stopped(late)  # measured: its config is in storage, trial 1's is not
        trials = _trials(url)
        assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.RUNNING,
                                            TrialState.RUNNING], "the first random config of "\
            f"seed {SEED} is expected feasible, so the late worker stops on trial 2"
        assert trials[1].params == {}
        early.send_signal(signal.SIGCONT)
        first = _wait_finished(url, 1)  # its check now sees trial 2 holding the same config
        assert first.params == trials[2].params
        assert first.state == TrialState.PRUNED and first.user_attrs[ATTR_HELD_BY] == 2
    finally:
        for proc in (early, late):
            if proc is not None:
                proc.send_signal(signal.SIGCONT)
    assert late is not None
    _exit_cleanly(late, tmp_path / "late.err")
    _exit_cleanly(early, tmp_path / "early.err")
    configs = _measured_configs(url)
    assert len(configs) == 3 and len(set(configs)) == 3, "a config was measured twice"


def test_a_holder_that_finishes_during_the_check_is_still_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs started together each enqueue the baseline. The earlier one's trial
    finishes while the later one reads the study: the later one must see it, live or
    finished, in one reading, and never measure the baseline a second time."""
    url = f"sqlite:///{tmp_path / 'race.db'}"
    err = tmp_path / "holder.err"
    holder = _start(url, 1, "tell:1", err)  # the baseline measured, its trial not yet told
    try:
        wait_stopped(holder)
        spec = load_spec(SPEC)
        study = optuna.load_study(study_name=NAME, storage=url,
                                  sampler=optuna.samplers.RandomSampler(seed=SEED))
        study.enqueue_trial(dict(spec.baseline))  # the second run's own baseline
        trial = study.ask()
        read = study._storage.get_all_trials
        reads = 0

        def holder_finishes_after_the_first_read(*args: Any, **kwargs: Any) -> Any:
            nonlocal reads
            seen = read(*args, **kwargs)
            reads += 1
            if reads == 1:
                holder.send_signal(signal.SIGCONT)
                _exit_cleanly(holder, err)
            return seen

        monkeypatch.setattr(study._storage, "get_all_trials",
                            holder_finishes_after_the_first_read)
        with pytest.raises(optuna.TrialPruned, match="trial 0 holds the same config"):
            TuningObjective.from_spec(spec)(trial)
        assert reads >= 1
        study.tell(trial, state=TrialState.PRUNED)
    finally:
        holder.send_signal(signal.SIGCONT)
    assert _measured_configs(url) == [tuple(sorted(spec.baseline.items()))]
