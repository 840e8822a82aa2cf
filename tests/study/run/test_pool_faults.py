"""Faults of a build pool, with real processes: a builder killed, a build that hangs, the
device's lease held by a dead or a paused process, the whole run killed mid-flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from aoe_optuna.backends.cpu.backend import CpuBackend
from aoe_optuna.study.run.build_pool import PoolPlan
from aoe_optuna.study.run.device_lease import LEASE_DIR_ENV
from aoe_optuna.study.run.loop import Budget, run_study
from aoe_optuna.study.run.objective import count_measured
from aoe_optuna.study.session import SamplerRequest, StudySession
from tests.study.run.cpu_study import SPACE, cpu_spec, measured
from tests.study.run.test_device_lease import start_holder
from tests.support.study_poll import stored_study

pytestmark = pytest.mark.slow
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"


@pytest.fixture(autouse=True)
def lease_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "leases"))
    return tmp_path / "leases"


def compiler(tmp_path: Path, body: str) -> Path:
    """A compiler that runs ``body`` (sh) before it hands over to cc; --version is cc's."""
    path = tmp_path / "wrapped-cc"
    path.write_text("#!/bin/sh\n"
                    'if [ "$1" = "--version" ]; then exec cc --version; fi\n'
                    f"{body}\nexec cc \"$@\"\n")
    path.chmod(0o755)
    return path


def session_on(tmp_path: Path, backend: CpuBackend, seed: int = 1) -> StudySession:
    return StudySession.open(f"sqlite:///{tmp_path / 'pool.db'}", cpu_spec(tmp_path / "w"),
                             sampler=SamplerRequest("random", seed=seed), backend=backend)


def no_running(study: optuna.Study) -> bool:
    return not study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))


def test_a_killed_builder_is_a_failed_build_and_the_study_goes_on(tmp_path: Path) -> None:
    pids = tmp_path / "builders"
    cc = compiler(tmp_path, f'echo $$ >> {pids}\nsleep 1')
    session = session_on(tmp_path, CpuBackend(work_dir=tmp_path / "w", max_seconds=0.05,
                                              compiler=str(cc)))
    run = threading.Thread(target=session.run, args=(Budget(n_measurements=4),),
                           kwargs={"builders": 1})
    run.start()
    deadline = time.monotonic() + 60
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    victim = int(pids.read_text().split()[0])
    os.kill(victim, signal.SIGKILL)
    run.join(120)
    trials = measured(session.study)
    assert len(trials) == 4 and no_running(session.study)
    killed = [t for t in trials if "SIGKILL" in str(t.user_attrs.get("failure_reason"))]
    assert len(killed) == 1 and killed[0].user_attrs["failure_kind"] == "runtime"
    assert "build crashed (SIGKILL)" in killed[0].user_attrs["failure_reason"]
    assert sum(t.state == TrialState.COMPLETE for t in trials) == 3


def test_a_hung_build_times_out_and_the_study_goes_on(tmp_path: Path) -> None:
    mark = tmp_path / "hung-once"
    cc = compiler(tmp_path, f'if [ ! -e {mark} ]; then touch {mark}; sleep 60; fi')
    backend = CpuBackend(work_dir=tmp_path / "w", max_seconds=0.05, compiler=str(cc),
                         build_timeout_s=1)
    session = session_on(tmp_path, backend)
    session.run(Budget(n_measurements=3), builders=1)
    trials = measured(session.study)
    assert len(trials) == 3 and no_running(session.study)
    hung = [t for t in trials if t.user_attrs.get("failure_kind") == "timeout"]
    assert len(hung) == 1
    assert "build exceeded its 1 s limit" in hung[0].user_attrs["failure_reason"]


def test_a_lease_held_by_a_killed_process_delays_nothing(tmp_path: Path) -> None:
    plan = PoolPlan.for_host(1, lease_timeout_s=5)
    holder = start_holder(plan.lease.device)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    session = session_on(tmp_path, CpuBackend(work_dir=tmp_path / "w", max_seconds=0.05))
    run_study(session.study, session.objective(), Budget(n_measurements=3), pool=plan)
    trials = measured(session.study)
    assert len(trials) == 3 and all(t.state == TrialState.COMPLETE for t in trials)
    assert all(t.user_attrs["queue_s"] < 5 for t in trials)


def test_a_lease_held_by_a_paused_process_fails_as_a_timeout_naming_it(
        tmp_path: Path) -> None:
    plan = PoolPlan.for_host(1, lease_timeout_s=0.5)
    holder = start_holder(plan.lease.device)
    holder.send_signal(signal.SIGSTOP)
    try:
        session = session_on(tmp_path, CpuBackend(work_dir=tmp_path / "w", max_seconds=0.05))
        run_study(session.study, session.objective(), Budget(n_measurements=2), pool=plan)
        trials = measured(session.study)
        assert len(trials) == 2
        for t in trials:
            assert t.user_attrs["failure_kind"] == "timeout"
            assert f"held by pid {holder.pid} for more than 0.5 s" in t.user_attrs[
                "failure_reason"]
    finally:
        holder.send_signal(signal.SIGCONT)
        holder.kill()
        holder.wait()
    # The holder gone, the study goes on: on the same device, under a limit no timing of
    # a loaded machine reaches (0.5 s is shorter than a sibling trial's timing there).
    resumed = PoolPlan.for_host(1, lease_timeout_s=60)
    assert resumed.lease.device == plan.lease.device
    run_study(session.study, session.objective(), Budget(n_measurements=4), pool=resumed)
    assert sum(t.state == TrialState.COMPLETE for t in measured(session.study)) == 2


def test_a_pool_run_killed_mid_flight_resumes_to_the_exact_budget(tmp_path: Path) -> None:
    spec = tmp_path / "cpu.json"
    spec.write_text(json.dumps({
        "op_name": "GemmKernel", "search_space": SPACE,
        "optimization_objective": "throughput", "hardware": {"soc": "Ascend910B2"},
        "workload": {"gemm": {"M": 64, "K": 64, "N": 64, "dtype": "fp32"}},
        "backend": {"name": "cpu", "max_seconds": 0.05, "work_dir": str(tmp_path / "w")}}))
    url = f"sqlite:///{tmp_path / 'kill.db'}"
    args = [str(AOE_TUNE), "--config", str(spec), "--storage", url, "--study-name", "k",
            "--n-trials", "8", "--builders", "1", "--sampler", "random", "--no-progress"]
    env = {**os.environ, LEASE_DIR_ENV: os.environ[LEASE_DIR_ENV]}
    proc = subprocess.Popen([*args, "--seed", "1"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        study = stored_study(url, "k")
        trials = [] if study is None else study.get_trials()
        if count_measured(trials) >= 2 and any(t.state == TrialState.RUNNING for t in trials):
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the run, its builds and its timing
    proc.wait()
    done = subprocess.run([*args, "--seed", "2"], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    study = optuna.load_study(study_name="k", storage=url)
    assert count_measured(study.get_trials()) == 8 and no_running(study)
