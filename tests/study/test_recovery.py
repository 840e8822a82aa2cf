"""Dead trials, trials held elsewhere, stuck samplers: each ends with a reason, none waits silently.

Real ``aoe-tune`` processes, real SIGKILLs (fault points), a real SQLite
storage, and a trial held by Optuna's own ask API as ``optuna ask`` would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import TrialState

from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.loop import MAX_SAME_INFEASIBLE, Budget, run_study
from aoe_optuna.study.run.objective import TuningObjective, count_measured, is_measured
from aoe_optuna.study.storage.opening import open_storage
from aoe_optuna.study.trials.recovery import MAX_RETRY
from tests.support.preloaded import aoe_tune_forked

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


def _tune(url: str, *extra: str, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AOE_FAULT")}
    if fault is not None:
        env["AOE_FAULT_AT"] = fault
    return aoe_tune_forked(["--config", str(SPEC), "--storage", url, "--study-name", "r",
                            "--sampler", "random", *extra], Path.cwd(), env, timeout=180)


@pytest.mark.slow  # five aoe-tune processes
def test_a_config_that_keeps_killing_its_worker_is_failed_and_not_retried(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    # each run dies as it measures its first trial: the baseline, then each retry of it
    for _ in range(MAX_RETRY + 1):
        proc = _tune(url, "--n-trials", "2", "--no-progress", fault="measure")
        assert proc.returncode == -signal.SIGKILL, proc.stderr
    done = _tune(url, "--n-trials", "2", "--no-progress")
    assert done.returncode == 0, done.stderr
    trials = optuna.load_study(study_name="r", storage=url).get_trials()
    baseline = trials[0].params
    runs = [t for t in trials if t.params == baseline or
            t.system_attrs.get("fixed_params") == baseline]
    assert [t.state for t in runs] == [TrialState.FAIL] * (MAX_RETRY + 1)
    assert not any(is_measured(t) for t in runs)
    last = runs[-1]  # Optuna's own retry record, on every retry
    assert RetryHeartbeatStaleTrialCallback.retried_trial_number(last) == runs[0].number
    assert RetryHeartbeatStaleTrialCallback.retry_history(last) == [t.number for t in runs[:-1]]
    assert "not retried again" in last.system_attrs["fail_reason"]
    assert count_measured(trials) == 2
    assert not [t for t in trials if t.state in (TrialState.WAITING, TrialState.RUNNING)]


@pytest.mark.slow  # waits out a timeout in a real process
def test_a_trial_held_by_optuna_ask_is_named_then_failed_after_stale_after(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    first = _tune(url, "--n-trials", "2", "--no-progress")
    assert first.returncode == 0, first.stderr
    study = optuna.load_study(study_name="r", storage=url)
    spec = load_spec(str(SPEC))
    held = study.ask(spec.space.distributions())  # as `optuna ask` does: RUNNING, no owner
    proc = _tune(url, "--n-trials", "3", "--stale-after", "6")
    assert proc.returncode == 0, proc.stderr
    assert f"held elsewhere: trial {held.number} RUNNING" in proc.stderr
    assert "optuna ask" in proc.stderr
    trials = optuna.load_study(study_name="r", storage=url).get_trials()
    t = trials[held.number]
    assert t.state == TrialState.FAIL
    assert "no heartbeat and no live owner" in t.system_attrs["fail_reason"]
    assert count_measured(trials) == 3


@pytest.mark.slow  # four aoe-tune processes
@pytest.mark.parametrize("storage", ["sqlite", "journal"])
def test_a_worker_killed_as_its_trial_is_created_is_found_dead_at_once(
    tmp_path: Path, storage: str,
) -> None:
    """Killed before any code of ours ran on its new trial: the trial names its worker
    from its creation, so the resume ends it at once. Before, it named nobody, and
    the resume waited a silent minute for it at its end."""
    url = f"sqlite:///{tmp_path / 'r.db'}" if storage == "sqlite" else str(tmp_path / "r.log")
    killed = _tune(url, "--n-trials", "4", "--no-progress", fault="born:2")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    study = optuna.load_study(study_name="r", storage=open_storage(url))
    (born,) = study.get_trials(states=(TrialState.RUNNING,))
    assert not born.params and born.user_attrs["worker"]["pid"] > 0
    started = time.monotonic()
    done = _tune(url, "--n-trials", "4", "--no-progress")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    trials = optuna.load_study(study_name="r", storage=open_storage(url)).get_trials()
    assert trials[born.number].state == TrialState.FAIL
    assert "died" in trials[born.number].system_attrs["fail_reason"]
    assert count_measured(trials) == 4
    assert took < 30, f"the resume took {took:.0f} s"  # the orphan rule's minute: 60+ s


def test_a_sampler_stuck_on_one_infeasible_config_is_stopped_with_a_line(capsys) -> None:
    spec = load_spec(str(SPEC))
    rng = np.random.default_rng(0)
    rows = rng.integers(0, spec.space.shape, size=(1000, len(spec.space.shape)))
    infeasible = spec.space.config(rows[~spec.space.is_feasible(rows)][0])
    sampler = optuna.samplers.PartialFixedSampler(infeasible, optuna.samplers.RandomSampler(0))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    result = run_study(study, TuningObjective.from_spec(spec), Budget(n_measurements=5))
    assert result.stop_reason == (
        f"the sampler proposed the same infeasible config {MAX_SAME_INFEASIBLE} times in a row")
    assert f"aoe-tune: stopping: {result.stop_reason}" in capsys.readouterr().err
    assert len(study.trials) == MAX_SAME_INFEASIBLE


def test_a_sampler_with_nothing_new_to_measure_is_stopped_after_max_idle() -> None:
    """A space measured out: TPE mixes repeats (served from storage) and infeasible configs."""
    from aoe_optuna.spec.loader import spec_from_dict

    spec = spec_from_dict({"search_space": {"tile_m": [16, 32], "tile_n": [64, 128],
                                            "tile_k": [64]}})
    study = optuna.create_study(direction="maximize",
                                sampler=optuna.samplers.TPESampler(seed=0))
    result = run_study(study, TuningObjective.from_spec(spec), Budget(n_measurements=10),
                       max_idle=30)
    assert "nothing new to measure" in result.stop_reason
    assert result.progress.measured == spec.space.n_feasible
