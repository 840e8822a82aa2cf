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

import optuna
from optuna.trial import TrialState

WORKER_ATTR = "worker"  # {"host": ..., "pid": ...} of the process running the trial
RETRY_OF_ATTR = "retry_of"


def worker_identity() -> dict[str, object]:
    """Host, pid and the pid's start time (pids are reused; the pair is not)."""
    me = os.getpid()
    return {"host": socket.gethostname(), "pid": me, "started": _start_ticks(me)}


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


def sweep_dead_trials(study: optuna.Study) -> list[int]:
    """Fail RUNNING trials of dead local workers and re-enqueue their params.

    Returns the numbers of the trials that were swept.
    """
    here = socket.gethostname()
    swept: list[int] = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        who = trial.user_attrs.get(WORKER_ATTR)
        if not isinstance(who, dict) or who.get("host") != here:
            continue
        pid = who.get("pid")
        if not isinstance(pid, int) or pid == os.getpid() or _alive(pid, who.get("started")):
            continue
        try:
            study._storage.set_trial_system_attr(
                trial._trial_id, "fail_reason", f"worker pid {pid} on {here} died"
            )
            if not study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL):
                continue
        except (RuntimeError, optuna.exceptions.UpdateFinishedTrialError):
            continue  # another worker swept it first
        if trial.params:  # killed after its config was chosen: measure that config again
            study.enqueue_trial(trial.params, user_attrs={RETRY_OF_ATTR: trial.number})
        swept.append(trial.number)
    return swept
