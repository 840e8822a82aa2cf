"""Operator runs with worker processes: on this host, and a follower as another host would.

The spec tunes decode attention beside the GEMM shapes, so every path is taken by an
attention study too: its chunks go to worker processes and to followers like a GEMM
shape's, and a killed worker's attention trial is measured again, once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from aoe_optuna.attrs import ALLOCATION_ATTR, DONE_ATTR, RETRY_HISTORY_KEY, WORKER_ATTR
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators.layer_ops import layer_operators
from aoe_optuna.operators.units import LayerUnit
from aoe_optuna.spec.loader import spec_from_dict
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.run.objective import count_measured, is_measured
from aoe_optuna.study.session import SamplerRequest
from aoe_optuna.study.storage.opening import open_storage
from tests.operators.test_tuner import SPEC as GEMM_SPEC  # the same small decode study
from tests.study.stopped import wait_stopped

pytestmark = pytest.mark.slow

SPEC = {**GEMM_SPEC, "workload": {**GEMM_SPEC["workload"], "attention": "tuned"}}
PARENT = "Gemm-Ascend910B2-qwen2.5-7b-decode-b4-attntuned-operators"
ATTENTION = f"{PARENT}/attention/b4-q28-kv4-d128-s1024"


def aoe(*args: str) -> list[str]:
    return [sys.executable, "-m", "aoe_optuna.cli.main", *args]


def check_run(url: str, budget: int) -> None:
    parent = optuna.load_study(study_name=PARENT, storage=url)
    assert parent.user_attrs[DONE_ATTR] is True
    total = 0
    for name, target in parent.user_attrs[ALLOCATION_ATTR].items():
        study = optuna.load_study(study_name=name, storage=url)
        done = [t for t in study.get_trials(deepcopy=False) if is_measured(t)]
        configs = [json.dumps(t.params, sort_keys=True) for t in done]
        assert len(configs) == len(set(configs)), f"{name}: a config measured twice"
        assert len(done) <= target, f"{name}: {len(done)} measured, {target} allocated"
        total += len(done) + int(study.user_attrs.get("retimed", {}).get("cost", 0))
    assert total <= budget


def test_two_workers_measure_each_chunk_and_keep_the_allocation(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    url = f"sqlite:///{tmp_path / 'w.db'}"
    run = subprocess.Popen(aoe("operators", "--config", str(spec), "--storage", url,
                               "--n-trials", "30", "--n-workers", "2", "--sampler", "random",
                               "--seed", "0", "--no-progress"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=tmp_path)
    _, err = run.communicate(timeout=600)
    assert run.returncode == 0, err[-2000:]
    check_run(url, 30)
    # the attention study's chunks went to the worker processes, not the tuner's own
    study = optuna.load_study(study_name=ATTENTION, storage=url)
    pids = {t.user_attrs[WORKER_ATTR]["pid"] for t in study.get_trials() if is_measured(t)}
    assert pids and run.pid not in pids


def test_a_follower_joins_the_allocation_until_the_run_is_done(tmp_path: Path) -> None:
    """The tuner stops itself right after allocating the attention study's warm-up (the
    sixth chunk: five GEMM shapes warm up first); the follower measures that chunk, and
    the continued tuner finds it done."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    url = f"sqlite:///{tmp_path / 'f.db'}"
    env = {**os.environ, "AOE_FAULT_AT": "allocated:6", "AOE_FAULT_SIGNAL": "SIGSTOP"}
    tuner = subprocess.Popen(aoe("operators", "--config", str(spec), "--storage", url,
                                 "--n-trials", "80", "--sampler", "random", "--seed", "0",
                                 "--no-progress"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=tmp_path, env=env)
    follower = None
    try:
        wait_stopped(tuner)
        parent = optuna.load_study(study_name=PARENT, storage=url)
        target = parent.user_attrs[ALLOCATION_ATTR][ATTENTION]
        assert target > 0 and measured(url, ATTENTION) == 0
        follower = subprocess.Popen(aoe("operators", "--storage", url, "--study-name",
                                        PARENT, "--follow"),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, cwd=tmp_path)
        deadline = time.monotonic() + 120
        while measured(url, ATTENTION) < target:
            assert time.monotonic() < deadline and follower.poll() is None
            time.sleep(0.2)
    finally:
        tuner.send_signal(signal.SIGCONT)
    out, err = tuner.communicate(timeout=600)
    assert tuner.returncode == 0, err[-2000:]
    _, ferr = follower.communicate(timeout=600)
    assert follower.returncode == 0, ferr[-2000:]
    assert f"joining {ATTENTION} up to {target} measurements" in ferr
    assert f"{PARENT} is done; joined" in ferr
    check_run(url, 80)
    study = optuna.load_study(study_name=ATTENTION, storage=url)
    by = [t.user_attrs[WORKER_ATTR]["pid"] for t in study.get_trials() if is_measured(t)]
    assert by[:target] == [follower.pid] * target  # the warm-up chunk is the follower's


def measured(url: str, name: str) -> int:
    return count_measured(optuna.load_study(study_name=name, storage=url).get_trials())


def test_a_killed_workers_attention_trial_is_measured_again_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both workers of an attention chunk are killed (SIGKILL) in their second
    measurement, on a Journal file; the next chunk gives the killed trials' configs back
    and ends with the budget exact, nothing left running and no config measured twice."""
    url = str(tmp_path / "k.log")
    spec = spec_from_dict(SPEC)
    (op,) = layer_operators(spec.workload)
    storage = open_storage(url)
    unit = LayerUnit.create(storage, url, "k", op, load_profile("Ascend910B2"),
                            SamplerRequest("random", {}, 0))
    unit.enqueue_baseline()
    monkeypatch.setenv("AOE_FAULT_AT", "measure:2")
    killed = unit.run(Budget(n_measurements=6), n_workers=2)
    assert sorted(rc for _, rc in killed.failed_workers) == [-signal.SIGKILL] * 2
    dead = [t for t in unit.study.get_trials() if t.state == TrialState.RUNNING]
    # Each worker leaves its trial RUNNING, unless one started after the other had died:
    # its own start then swept the dead trial already (failed, its config enqueued).
    assert 1 <= len(dead) <= 2 and all(t.params for t in dead)
    monkeypatch.delenv("AOE_FAULT_AT")
    done = unit.run(Budget(n_measurements=6), n_workers=2)
    assert not done.failed_workers
    trials = unit.study.get_trials()
    assert count_measured(trials) == 6
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    configs = [json.dumps(t.params, sort_keys=True) for t in trials if is_measured(t)]
    assert len(configs) == len(set(configs))
    for t in dead:  # each killed config was measured by its retry
        retry = next(r for r in trials if r.system_attrs.get(RETRY_HISTORY_KEY) == [t.number])
        assert retry.state == TrialState.COMPLETE and retry.params == t.params


def test_a_paused_workers_attention_result_is_kept_and_it_stops_cleanly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A layer worker stops itself (SIGSTOP) in its second tell, its result stored; the
    tuner's own chunk on that study completes the trial with that result once the
    heartbeat's grace is past, and the continued worker says so and exits 0."""
    from aoe_optuna.operators.units import LAYER_WORKER
    from aoe_optuna.study.run.worker_pool import WorkerPlan, worker_env
    monkeypatch.setenv("AOE_HEARTBEAT_S", "1")  # a grace of 4 s
    url, n = f"sqlite:///{tmp_path / 'p.db'}", 6
    (op,) = layer_operators(spec_from_dict(SPEC).workload)
    unit = LayerUnit.create(open_storage(url), url, "p", op, load_profile("Ascend910B2"),
                            SamplerRequest("random", {}, 0))
    unit.enqueue_baseline()
    plan = WorkerPlan(url, unit.study.study_name, unit.session.sampler_choice,
                      Budget(n_measurements=n), module=LAYER_WORKER)
    env = {**worker_env(1, [], url), "AOE_HEARTBEAT_S": "1", "AOE_FAULT_AT": "tell:2",
           "AOE_FAULT_SIGNAL": "SIGSTOP"}
    err = tmp_path / "paused.err"
    paused = subprocess.Popen(plan.argv(1), env=env, stderr=err.open("w"))
    try:
        wait_stopped(paused)
        (held,) = [t for t in unit.study.get_trials() if t.state == TrialState.RUNNING]
        assert held.user_attrs["measured"] is True  # its result reached storage
        assert not unit.run(Budget(n_measurements=n)).failed_workers
    finally:
        paused.send_signal(signal.SIGCONT)
    assert paused.wait(timeout=60) == 0, err.read_text()
    assert (f"trial {held.number} was ended by another worker while this one was paused; "
            "its stored result is kept") in err.read_text()
    trials = unit.study.get_trials()
    assert count_measured(trials) == n
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    configs = [json.dumps(t.params, sort_keys=True) for t in trials if is_measured(t)]
    assert len(configs) == len(set(configs))
    assert trials[held.number].state == TrialState.COMPLETE
