"""A worker that wakes up to find its trial ended by another worker.

A worker paused for longer than the heartbeat's grace (SIGSTOP, a frozen VM,
a host swapping for a minute) looks exactly like a dead one, and another
worker ends its trial: completed with its result when the whole result had
reached storage (:class:`aoe_optuna.study.trials.recovery.KeepResultOnStale`),
otherwise failed and its config enqueued again. When the paused worker
resumes, its next write or its tell meets a finished trial and Optuna raises.
Instead, the run says in one line what became of the trial and goes on with
the next one. A measurement the worker finished after its trial was failed
is handed to the retry of its config while that retry still waits (and the
budget lets it measure): the config is measured once, not twice, and the
budget stays exact. A retry another worker has started measures the config
itself; the late result is then dropped, and the line says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import (
    ATTR_CONSTRAINTS,
    ATTR_FAILURE_KIND,
    ATTR_LATE_RESULT_OF,
    ATTR_MEASURED,
    OPTUNA_CONSTRAINTS_KEY,
    RETRY_HISTORY_KEY,
    WORKER_ATTR,
)
from aoe_optuna.study.trials.owned_birth import worker_identity


class EndedElsewhere(Exception):
    """The trial this worker was running was ended by another worker meanwhile."""


def told_too_late(exc: BaseException) -> bool:
    """Whether ``exc`` is Optuna refusing a write to, or the tell of, a finished trial.

    ``Study.optimize`` reports a refused tell as ``ValueError("Cannot tell a
    FAIL trial")``, or, when the objective had returned a value, as an
    ``AssertionError("Should not reach.")`` raised while handling it.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, optuna.exceptions.UpdateFinishedTrialError):
            return True
        if isinstance(seen, ValueError) and str(seen).startswith("Cannot tell a "):
            return True
        seen = seen.__context__ if isinstance(seen, AssertionError) else None
    return False


def what_became_of(trial: FrozenTrial) -> str:
    """One line: the trial this worker held, ended by another worker while it was paused."""
    head = f"trial {trial.number} was ended by another worker while this one was paused"
    if trial.state == TrialState.COMPLETE:
        return f"{head}; its stored result is kept ({trial.value:,.4g} tokens/s)"
    if trial.user_attrs.get(ATTR_MEASURED):
        kind = "failed measurement" if trial.user_attrs.get(ATTR_FAILURE_KIND) else "result"
        return f"{head}; its stored {kind} counts as a measurement"
    return f"{head}; its config goes back to the study"


def hand_over(
    study: optuna.Study,
    trial_id: int,
    result: Mapping[str, Any],
    value: float | None,
    may_measure: Callable[[optuna.Trial], bool] | None,
) -> str:
    """Give a late measurement to the waiting retry of its config; one line on the outcome.

    ``result``: the result's user attributes in write order (``measured``
    last); ``value``: its tokens/s, None for a failed measurement.
    """
    storage = study._storage
    dead = storage.get_trial(trial_id)
    head = f"trial {dead.number} was ended by another worker while this one was paused"
    retry = _retry_of(study, dead.number)
    if retry is None:
        return f"{head}; its config was not retried, and its late measurement is dropped"
    if retry.state != TrialState.WAITING:
        return (f"{head}; trial {retry.number} measures its config again, and its late "
                "measurement is dropped")
    if may_measure is not None and not may_measure(optuna.trial.Trial(study, retry._trial_id)):
        return f"{head}; the budget is taken, and its late measurement is dropped"
    try:
        won = storage.set_trial_state_values(retry._trial_id, TrialState.RUNNING)
    except optuna.exceptions.UpdateFinishedTrialError:
        won = False
    if not won:
        return (f"{head}; trial {retry.number} measures its config again, and its late "
                "measurement is dropped")
    _write_as(storage, retry._trial_id, dead, result)
    if value is None:
        storage.set_trial_state_values(retry._trial_id, TrialState.FAIL)
    else:
        storage.set_trial_state_values(retry._trial_id, TrialState.COMPLETE, [value])
    return f"{head}; its measurement is kept as trial {retry.number}, the retry of its config"


def _retry_of(study: optuna.Study, number: int) -> FrozenTrial | None:
    """The trial enqueued to run dead trial ``number``'s config again, if any."""
    for t in study.get_trials(deepcopy=False):
        history = t.system_attrs.get(RETRY_HISTORY_KEY)
        if isinstance(history, list) and history and history[-1] == number:
            return t
    return None


def _write_as(storage: optuna.storages.BaseStorage, trial_id: int, dead: FrozenTrial,
              result: Mapping[str, Any]) -> None:
    """Everything the dead trial held, then the result (``measured`` last), onto ``trial_id``."""
    storage.set_trial_user_attr(trial_id, WORKER_ATTR, worker_identity())
    storage.set_trial_user_attr(trial_id, ATTR_LATE_RESULT_OF, dead.number)
    for name, value in dead.params.items():
        dist = dead.distributions[name]
        storage.set_trial_param(trial_id, name, dist.to_internal_repr(value), dist)
    for key, value in dead.system_attrs.items():
        if key == OPTUNA_CONSTRAINTS_KEY or key.startswith(f"{OPTUNA_CONSTRAINTS_KEY}:"):
            storage.set_trial_system_attr(trial_id, key, value)
    if ATTR_CONSTRAINTS in dead.user_attrs:
        storage.set_trial_user_attr(trial_id, ATTR_CONSTRAINTS, dead.user_attrs[ATTR_CONSTRAINTS])
    for key, value in result.items():
        storage.set_trial_user_attr(trial_id, key, value)
