"""Several worker processes on one study: one per device, or plain processes.

The storage is the only channel between workers (as it is between hosts):
each worker is an ``aoe-tune --worker`` process that loads the study by name,
builds its own sampler (seed + worker index) and measures until the study's
budget is spent; :class:`aoe_optuna.study.runner.BudgetGuard` keeps the count exact.
This process only starts them, shows the progress of the whole study, and
passes Ctrl-C on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import optuna

from aoe_optuna.study.runner import Budget, RunResult, StudyProgress
from aoe_optuna.study.runner import _Stopper as Stopper

POLL_S = 1.0
DEVICE_ENV = "ASCEND_RT_VISIBLE_DEVICES"


def worker_env(index: int, devices: list[str]) -> dict[str, str]:
    env = dict(os.environ)
    env["AOE_WORKER_INDEX"] = str(index)
    if devices:
        env[DEVICE_ENV] = devices[index]
    return env


def run_workers(
    study: optuna.Study,
    budget: Budget,
    on_update: Callable[[StudyProgress], None],
    worker_args: list[str],
    n_workers: int,
    devices: list[str],
    seed: int | None,
) -> RunResult:
    """Start ``n_workers`` workers, follow the study until they all exit."""
    started = time.monotonic()
    procs: list[subprocess.Popen] = []
    for i in range(n_workers):
        args = [*worker_args] + (["--seed", str(seed + i)] if seed is not None else [])
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "aoe_optuna.cli.main", *args], env=worker_env(i, devices),
        ))
    stopper = Stopper(budget, started, on_update)
    try:
        while any(p.poll() is None for p in procs):
            on_update(StudyProgress.of(study.get_trials(deepcopy=False)))
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        _interrupt(procs)
        raise
    progress = StudyProgress.of(study.get_trials(deepcopy=False))
    on_update(progress)
    failed = [(i, p.returncode) for i, p in enumerate(procs) if p.returncode not in (0, 130)]
    reason = stopper.check(progress) or "workers stopped"
    if failed:
        reason += "; " + ", ".join(f"worker {i} exited with code {rc}" for i, rc in failed)
    return RunResult(reason, progress, time.monotonic() - started)


def _interrupt(procs: list[subprocess.Popen]) -> None:
    """Ctrl-C reaches the workers from the terminal too; make sure, then wait for them."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 30
    for p in procs:
        try:
            p.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
