"""Several worker processes on one study: one per device, or plain processes.

The storage is the only channel between workers (as it is between hosts):
each worker is a ``python -m aoe_optuna.study.worker`` process that opens the
study by name (:class:`aoe_optuna.study.session.StudySession`), builds its own
sampler (seed + worker index) and measures until the study's budget is spent;
:class:`aoe_optuna.study.run.loop.BudgetGuard` keeps the count exact. This process
only starts them, shows the progress of the whole study, and passes Ctrl-C on.
The storage URL travels in the environment, not on the command line, where any
user of the host could read its password.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from aoe_optuna.study.run.loop import Budget, RunResult, StudyProgress
from aoe_optuna.study.run.loop import _Stopper as Stopper
from aoe_optuna.study.run.sampler_choice import SamplerChoice

POLL_S = 1.0
DEVICE_ENV = "ASCEND_RT_VISIBLE_DEVICES"
STORAGE_ENV = "AOE_WORKER_STORAGE"
WORKER_MODULE = "aoe_optuna.study.worker"


@dataclass(frozen=True)
class WorkerPlan:
    """What every worker of one study runs: the study, its sampler and the budget."""

    storage_url: str
    study_name: str
    sampler: SamplerChoice
    budget: Budget
    stale_after_s: float | None = None
    max_idle: int | None = None  # proposals in a row that measure nothing before a stop
    module: str = WORKER_MODULE  # the worker's ``python -m`` module (a study kind's own)
    builders: int | None = None  # each worker's build pool (None: build and time in turn)
    host_devices: int = 1  # workers on this host: a card's host program keeps a core each

    def argv(self, index: int) -> list[str]:
        """Worker ``index``'s command line (the storage URL goes in its environment)."""
        sampler = {"name": self.sampler.name, "kwargs": self.sampler.kwargs,
                   "seed": self.sampler.seed}
        return [sys.executable, "-m", self.module, "--study-name", self.study_name,
                "--index", str(index), "--sampler", json.dumps(sampler),
                "--budget", json.dumps(dataclasses.asdict(self.budget)),
                *(["--stale-after", str(self.stale_after_s)] if self.stale_after_s else []),
                *(["--max-idle", str(self.max_idle)] if self.max_idle is not None else []),
                *(["--builders", str(self.builders), "--host-devices",
                   str(self.host_devices)] if self.builders is not None else [])]


def worker_env(index: int, devices: list[str], storage_url: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["AOE_WORKER_INDEX"] = str(index)
    if storage_url is not None:
        env[STORAGE_ENV] = storage_url
    if devices:
        env[DEVICE_ENV] = devices[index]
    return env


def run_workers(
    study: optuna.Study,
    budget: Budget,
    on_update: Callable[[StudyProgress], None],
    plan: WorkerPlan,
    n_workers: int,
    devices: list[str],
) -> RunResult:
    """Start ``n_workers`` workers, follow the study until they all exit."""
    started = time.monotonic()
    procs: list[subprocess.Popen] = []
    for i in range(n_workers):
        procs.append(subprocess.Popen(plan.argv(i),
                                      env=worker_env(i, devices, plan.storage_url)))
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
    failed = tuple((i, p.returncode) for i, p in enumerate(procs)
                   if p.returncode not in (0, 130))
    reason = stopper.check(progress) or "workers stopped"
    if failed:
        reason += "; " + ", ".join(f"worker {i} exited with code {rc}" for i, rc in failed)
    return RunResult(reason, progress, time.monotonic() - started, failed_workers=failed)


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
