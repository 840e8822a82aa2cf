"""Finding trials whose worker died, and giving their configs back to the study.

Optuna's heartbeat marks a RUNNING trial stale only after its grace period,
and only inside ``Study.optimize`` on RDB storages. A worker that starts right
after a ``kill -9`` on the same host can do better: the dead worker's pid is
recorded on its trial, so a RUNNING trial from this host whose pid no longer
exists is certainly dead. What happens to it depends only on what reached
storage, never on how far the dead worker got:

* its result's last write (``measured``) is there: the result is kept, and the
  trial is finished as the result says;
* otherwise its config, if chosen, goes back to the study as Optuna's own
  retry does (``failed_trial`` / ``retry_history`` system attributes), at most
  ``MAX_RETRY`` times: a config whose trials keep killing their worker is
  failed with that reason and never enqueued again. A config is chosen when
  every parameter of the space is set (or was fixed by its enqueue): a trial
  killed while its sampler was still choosing is not retried with the
  parameters it had, since the sampler would fill in the rest and a config
  nobody proposed would be measured.

Optuna's heartbeat (other hosts) and the ``--stale-after`` timeout (trials
held by ``optuna ask`` or a host without heartbeats) end in the same place:
Optuna fails a stale trial before its callback runs, so the storages
aoe-tune opens keep a stored result first (:class:`KeepResultOnStale`).

A stale trial's worker may only have been paused (SIGSTOP, a swapped-out or
frozen host) and wake up later; :mod:`aoe_optuna.study.trials.ended_elsewhere` says what it does
then.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime
from typing import Any

import optuna
from optuna.storages import RDBStorage
from optuna.storages._heartbeat import BaseHeartbeat, is_heartbeat_enabled
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import (
    ATTR_BASELINE,
    ATTR_FAILURE_KIND,
    ATTR_MEASURED,
    ATTR_REPEAT_OF,
    ATTR_TOKENS_PER_S,
    FAILED_TRIAL_KEY,
    OPTUNA_FAIL_REASON_KEY,
    OPTUNA_FIXED_PARAMS_KEY,
    RETRY_HISTORY_KEY,
    SPACE_PARAMS_ATTR,
    SPEC_ATTR,
    WORKER_ATTR,
)
from aoe_optuna.process_liveness import same_process, stopped
from aoe_optuna.spec.format import SpecError
from aoe_optuna.spec.loader import spec_from_dict
from aoe_optuna.study.trials.fault_points import fault_point
from aoe_optuna.study.trials.owned_birth import OwnedBirths, worker_identity

MAX_RETRY = 3  # retries of one config after its trial died, on every recovery path


class WorkerTaggingSampler(optuna.samplers.BaseSampler):
    """Wraps a sampler; marks each new trial with this worker before anything else runs.

    Optuna creates a trial, then runs the sampler (a GP fit can take seconds),
    and only then starts the trial's heartbeat. A worker killed inside that
    window would leave a RUNNING trial that nothing identifies as dead, and the
    study's budget would wait for it forever. ``before_trial`` runs right after
    the trial is created: it records the worker and a first heartbeat, where
    the storage did not write them with the trial (a gRPC client's trials, a
    WAITING trial started outside SQLite).
    """

    def __init__(self, inner: optuna.samplers.BaseSampler) -> None:
        self.inner = inner
        self.identity = worker_identity()
        self.current: int | None = None  # the id of the trial this worker runs now

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        fault_point("born")  # a test kills a worker here, its trial just created
        self.current = trial._trial_id
        self.tag(study, trial)
        self.inner.before_trial(study, trial)

    def tag(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Record this worker and a first heartbeat on the new trial, unless the storage
        wrote both as it created it (:mod:`aoe_optuna.study.trials.owned_birth`)."""
        if trial.user_attrs.get(WORKER_ATTR) == self.identity:
            return
        storage = study._storage
        storage.set_trial_user_attr(trial._trial_id, WORKER_ATTR, self.identity)
        if isinstance(storage, BaseHeartbeat) and is_heartbeat_enabled(storage):
            storage.record_heartbeat(trial._trial_id)

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


ORPHAN_AFTER_S = 60.0


def _orphaned(trial: FrozenTrial, now: datetime) -> bool:
    """RUNNING for a minute with neither params nor a worker: its creator died at birth.

    aoe-tune's trials carry their worker from the write that creates them
    (:mod:`aoe_optuna.study.trials.owned_birth`); this catches those of other
    creators: a gRPC client killed before ``before_trial`` marked its trial, or
    ``optuna ask`` without a search space and without a tell.
    """
    started = trial.datetime_start
    return (not trial.params and started is not None
            and (now - started).total_seconds() > ORPHAN_AFTER_S)


def _fail(study: optuna.Study, trial: FrozenTrial, reason: str) -> bool:
    """Mark a dead trial FAIL; False when another worker finished or swept it first."""
    try:
        study._storage.set_trial_system_attr(trial._trial_id, OPTUNA_FAIL_REASON_KEY, reason)
        return bool(study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL))
    except (RuntimeError, optuna.exceptions.UpdateFinishedTrialError):
        return False


def holds_result(trial: FrozenTrial) -> bool:
    """The trial's result reached storage whole: ``measured`` is its last write."""
    return bool(trial.user_attrs.get(ATTR_MEASURED)) and ATTR_REPEAT_OF not in trial.user_attrs


def retry_history(trial: FrozenTrial) -> list[int]:
    """The trials before this one that ran its config and died (Optuna's ``retry_history``)."""
    return list(trial.system_attrs.get(RETRY_HISTORY_KEY, []))


def trial_config(trial: FrozenTrial) -> dict[str, Any]:
    """The config a trial was running: its params, or those it was enqueued with."""
    return {**trial.system_attrs.get(OPTUNA_FIXED_PARAMS_KEY, {}), **trial.params}


def space_names(study: optuna.Study) -> set[str] | None:
    """The parameter names of the study's space, from its stored spec (or the names a
    study without one stored); None when unknown."""
    names = study.user_attrs.get(SPACE_PARAMS_ATTR)
    if isinstance(names, list):
        return set(names)
    stored = study.user_attrs.get(SPEC_ATTR)
    if not isinstance(stored, dict):
        return None
    space = stored.get("search_space")
    if isinstance(space, dict):
        return set(space)
    try:  # a backend's own space: the spec says how to build it
        return set(spec_from_dict(stored, source=f"<study {study.study_name}>").space.names)
    except (SpecError, ImportError, OSError):
        return None


def chosen_config(study: optuna.Study, trial: FrozenTrial) -> dict[str, Any]:
    """The config to measure again for a dead trial: all of it, or what its enqueue fixed.

    A trial killed while its sampler was still choosing has some parameters
    set; retried with just those fixed, the sampler would fill in the rest and
    another config would be measured. Such a trial had no config chosen: it is
    retried only with what it was enqueued with (nothing, for a sampled trial).
    """
    config = trial_config(trial)
    names = space_names(study)
    if names is None or names <= set(config):
        return config
    return dict(trial.system_attrs.get(OPTUNA_FIXED_PARAMS_KEY, {}))


def _retry(study: optuna.Study, trial: FrozenTrial) -> bool:
    """Enqueue a dead trial's config once more, unless it has been retried ``MAX_RETRY`` times.

    The same record as Optuna's retry callback, but of the dead trial's user
    attributes only the baseline mark travels: a partial result or a repeat
    mark must not.
    """
    history = [*retry_history(trial), trial.number]
    config = chosen_config(study, trial)
    if not config or len(history) > MAX_RETRY:
        return False
    kept = {k: v for k, v in trial.user_attrs.items() if k == ATTR_BASELINE}
    study.add_trial(optuna.create_trial(
        state=TrialState.WAITING,
        user_attrs=kept,
        system_attrs={OPTUNA_FIXED_PARAMS_KEY: config,
                      FAILED_TRIAL_KEY: trial.system_attrs.get(FAILED_TRIAL_KEY, trial.number),
                      RETRY_HISTORY_KEY: history},
    ))
    return True


def stored_value(trial: FrozenTrial) -> float | None:
    """The tokens/s of a whole successful result in storage, else None."""
    value = trial.user_attrs.get(ATTR_TOKENS_PER_S)
    if (holds_result(trial) and ATTR_FAILURE_KIND not in trial.user_attrs
            and isinstance(value, (int, float))):
        return float(value)
    return None


def complete_with_result(storage: optuna.storages.BaseStorage, trial: FrozenTrial) -> bool:
    """Finish a RUNNING trial as COMPLETE with its stored tokens/s; False if not ours to end."""
    value = stored_value(trial)
    if value is None:
        return False
    try:
        return bool(storage.set_trial_state_values(trial._trial_id, TrialState.COMPLETE, [value]))
    except (RuntimeError, optuna.exceptions.UpdateFinishedTrialError):
        return False


def finish_dead_trial(study: optuna.Study, trial: FrozenTrial, why: str) -> bool:
    """End a RUNNING trial whose worker is gone; True when this call ended it."""
    if holds_result(trial):
        if stored_value(trial) is not None:
            return complete_with_result(study._storage, trial)
        return _fail(study, trial, f"{why} after recording its failed measurement")
    kills = len(retry_history(trial)) + 1
    config = chosen_config(study, trial)
    if config and kills > MAX_RETRY:
        why = f"{why}; this config's trial died {kills} times, so it is not retried again"
    elif not config and trial.params:
        why = f"{why} while its config was being chosen, so no config is retried"
    if not _fail(study, trial, why):
        return False
    _retry(study, trial)
    return True


class KeepResultOnStale:
    """RDB storage mixin: a heartbeat-stale trial that holds a whole result is completed.

    Optuna's ``fail_stale_trials`` marks every stale trial FAIL and only then
    runs the callback, too late to keep a successful result as the trial's
    value: it would count as a measurement yet stay out of ``best_trial``, the
    samplers' history and the export. Its worker may only be paused, not dead.
    So the stale trials that hold a whole successful result are completed with
    it here, where Optuna asks which trials are stale, and not handed to it.
    """

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        stale = []
        for trial_id in super()._get_stale_trial_ids(study_id):  # type: ignore[misc]
            trial = self.get_trial(trial_id)  # type: ignore[attr-defined]
            if stored_value(trial) is None:
                stale.append(trial_id)
            else:  # False when the worker woke up and told it first: it is kept either way
                complete_with_result(self, trial)  # type: ignore[arg-type]
        return stale


class ResultKeepingRDBStorage(OwnedBirths, KeepResultOnStale, RDBStorage):
    """Optuna's RDB storage (PostgreSQL, MySQL) whose heartbeat keeps stored results and
    whose trials name their worker from their first write."""


class RetryStaleTrial:
    """Optuna's heartbeat-stale callback, with the same rules as the pid sweep.

    Optuna has already failed the trial (one with a whole successful result
    never gets here, see :class:`KeepResultOnStale`); a failed measurement that
    reached storage stays (the trial counts as measured), anything else is
    retried up to the cap.
    """

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if not holds_result(trial):
            _retry(study, trial)


def owner_text(trial: FrozenTrial) -> str:
    """Who holds a RUNNING trial, for the progress line."""
    who = trial.user_attrs.get(WORKER_ATTR)
    if isinstance(who, dict):
        pid = who.get("pid")
        here = who.get("host") == socket.gethostname()
        paused = " (stopped)" if here and isinstance(pid, int) and stopped(pid) else ""
        return f"pid {pid} on {who.get('host')}{paused}"
    return "no aoe-tune worker (optuna ask?)"


def held_elsewhere(trial: FrozenTrial) -> bool:
    """RUNNING and not held by a running process of this host: the study waits on it.

    A stopped local worker counts: nothing advances its trial until it is
    continued (or, on RDB storages, the heartbeat ends the trial).
    """
    who = trial.user_attrs.get(WORKER_ATTR)
    if not isinstance(who, dict) or who.get("host") != socket.gethostname():
        return True
    pid = who.get("pid")
    return not isinstance(pid, int) or not same_process(pid, who.get("started")) or stopped(pid)


def _has_heartbeat(study: optuna.Study, trial: FrozenTrial) -> bool:
    """Optuna's heartbeat watches trials that aoe-tune workers run on RDB storages."""
    storage = study._storage
    return (isinstance(trial.user_attrs.get(WORKER_ATTR), dict)
            and isinstance(storage, BaseHeartbeat) and is_heartbeat_enabled(storage))


def sweep_dead_trials(study: optuna.Study, stale_after_s: float | None = None) -> list[int]:
    """Finish RUNNING trials of dead local workers; retry their configs.

    With ``stale_after_s``, a RUNNING trial that no heartbeat watches and no
    live process of this host owns (``optuna ask`` without a tell, a host on a
    Journal file) is ended too once it is that old. Returns the numbers of the
    trials that were ended.
    """
    here = socket.gethostname()
    swept: list[int] = []
    now = datetime.now()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        who = trial.user_attrs.get(WORKER_ATTR)
        if who is None and _orphaned(trial, now):
            if finish_dead_trial(study, trial, "created by a worker that died before marking it"):
                swept.append(trial.number)
            continue
        if isinstance(who, dict) and who.get("host") == here:
            pid = who.get("pid")
            if (not isinstance(pid, int) or pid == os.getpid()
                    or same_process(pid, who.get("started"))):
                continue
            if finish_dead_trial(study, trial, f"worker pid {pid} on {here} died"):
                swept.append(trial.number)
            continue
        age = _age_s(trial, now)
        if (stale_after_s is not None and age is not None and age > stale_after_s
                and not _has_heartbeat(study, trial)):
            why = (f"RUNNING for {age:.0f} s with no heartbeat and no live owner "
                   f"({owner_text(trial)}; --stale-after {stale_after_s:g})")
            if finish_dead_trial(study, trial, why):
                swept.append(trial.number)
    return swept


def _age_s(trial: FrozenTrial, now: datetime) -> float | None:
    started = trial.datetime_start
    return None if started is None else (now - started).total_seconds()
