"""Finding trials whose worker died, and giving their configs back to the study.

Optuna's heartbeat marks a RUNNING trial stale only after its grace period,
and only inside ``Study.optimize`` on RDB storages. A worker that starts right
after a ``kill -9`` on the same host can do better: the dead worker's pid is
recorded on its trial, so a RUNNING trial from this host whose pid no longer
exists is certainly dead. It is failed and its params are enqueued again, so
the config is measured and no measurement is lost or counted twice.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime
from typing import Any

import optuna
from optuna.storages._heartbeat import BaseHeartbeat, is_heartbeat_enabled
from optuna.trial import FrozenTrial, TrialState

WORKER_ATTR = "worker"  # {"host": ..., "pid": ...} of the process running the trial
RETRY_OF_ATTR = "retry_of"


def worker_identity() -> dict[str, object]:
    """Host, pid and the pid's start time (pids are reused; the pair is not)."""
    me = os.getpid()
    return {"host": socket.gethostname(), "pid": me, "started": _start_ticks(me)}


class WorkerTaggingSampler(optuna.samplers.BaseSampler):
    """Wraps a sampler; marks each new trial with this worker before anything else runs.

    Optuna creates a trial, then runs the sampler (a GP fit can take seconds),
    and only then starts the trial's heartbeat. A worker killed inside that
    window would leave a RUNNING trial that nothing identifies as dead, and the
    study's budget would wait for it forever. ``before_trial`` runs right after
    the trial is created: it records the worker and a first heartbeat.
    """

    def __init__(self, inner: optuna.samplers.BaseSampler) -> None:
        self.inner = inner
        self.identity = worker_identity()

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        storage = study._storage
        storage.set_trial_user_attr(trial._trial_id, WORKER_ATTR, self.identity)
        if isinstance(storage, BaseHeartbeat) and is_heartbeat_enabled(storage):
            storage.record_heartbeat(trial._trial_id)
        self.inner.before_trial(study, trial)

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict:
        return self.inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial, search_space: dict) -> dict:
        return self.inner.sample_relative(study, trial, search_space)

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: Any
    ) -> Any:
        return self.inner.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Any
    ) -> None:
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.inner.reseed_rng()


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux /proc), else None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else None


def _alive(pid: int, started: object) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if isinstance(started, int):
        return _start_ticks(pid) == started  # same pid, other process: the worker is dead
    return True


ORPHAN_AFTER_S = 60.0


def _orphaned(trial: FrozenTrial, now: datetime) -> bool:
    """RUNNING for a minute with neither params nor a worker: its creator died at birth.

    (Between creating a trial and marking it, a worker can be killed; no
    heartbeat is recorded yet either. A trial that someone is really working on
    gets its worker mark within milliseconds, or its params from ``optuna ask``.)
    """
    started = trial.datetime_start
    return (not trial.params and started is not None
            and (now - started).total_seconds() > ORPHAN_AFTER_S)


def _fail(study: optuna.Study, trial: FrozenTrial, reason: str) -> bool:
    """Mark a dead trial FAIL; False when another worker finished or swept it first."""
    try:
        study._storage.set_trial_system_attr(trial._trial_id, "fail_reason", reason)
        return bool(study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL))
    except (RuntimeError, optuna.exceptions.UpdateFinishedTrialError):
        return False


def sweep_dead_trials(study: optuna.Study) -> list[int]:
    """Fail RUNNING trials of dead local workers and re-enqueue their params.

    Returns the numbers of the trials that were swept.
    """
    here = socket.gethostname()
    swept: list[int] = []
    now = datetime.now()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        who = trial.user_attrs.get(WORKER_ATTR)
        if who is None and _orphaned(trial, now):
            if _fail(study, trial, "created by a worker that died before marking it"):
                swept.append(trial.number)
            continue
        if not isinstance(who, dict) or who.get("host") != here:
            continue
        pid = who.get("pid")
        if not isinstance(pid, int) or pid == os.getpid() or _alive(pid, who.get("started")):
            continue
        if not _fail(study, trial, f"worker pid {pid} on {here} died"):
            continue
        if trial.params:  # killed after its config was chosen: measure that config again
            study.enqueue_trial(trial.params, user_attrs={RETRY_OF_ATTR: trial.number})
        swept.append(trial.number)
    return swept
