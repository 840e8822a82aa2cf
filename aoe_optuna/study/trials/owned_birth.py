"""RDB storages whose trials name their worker, with a first heartbeat, as they start.

Optuna writes a new trial RUNNING in one transaction and calls the sampler's
``before_trial`` after a further read; aoe-tune's worker mark used to be
written only there (:class:`~aoe_optuna.study.trials.recovery.WorkerTaggingSampler`).
A worker killed between the two left a trial that named nobody and had no
heartbeat: no pid to find dead, nothing to go stale. It was ended only as an
orphan a minute later, and a resumed study, whose budget is exact, waited
that minute at its end, saying nothing (7 of 25 runs of three kills and a
resume, ``tests/study/test_workers.py``: the resume took 58-62 s, not 5).

Here the mark and the first heartbeat go into the transaction that creates
the trial, and into the one that starts a WAITING trial on SQLite
(:mod:`aoe_optuna.study.storage.sqlite_pop`), so no trial is RUNNING without
them: a dead worker's trial is ended at once on its host by the pid sweep,
and after the heartbeat's grace from any other.

The process that creates a trial is the one that runs it, except the gRPC
proxy's server, which creates trials for its clients: it opens its storage
with ``owned_births = False``. On a Journal file the trial's creating record
carries the mark (the file has no heartbeat). A gRPC client keeps the mark
of ``before_trial``: its trials are created by the server.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from typing import Any

import sqlalchemy
from optuna.storages import JournalStorage
from optuna.storages._heartbeat import is_heartbeat_enabled
from optuna.storages._rdb import models
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import WORKER_ATTR
from aoe_optuna.process_liveness import start_ticks

_identity: dict[int, dict[str, object]] = {}


def worker_identity() -> dict[str, object]:
    """Host, pid and the pid's start time (pids are reused; the pair is not)."""
    me = os.getpid()
    if me not in _identity:  # one /proc read per process, not one per trial
        _identity[me] = {"host": socket.gethostname(), "pid": me, "started": start_ticks(me)}
    return dict(_identity[me])


class OwnedBirths:
    """RDBStorage mixin: a trial this process starts RUNNING names it from its first write."""

    owned_births = True  # False where trials are created for other processes (gRPC server)

    def _create_new_trial(self, study_id: int,
                          template_trial: FrozenTrial | None = None) -> FrozenTrial:
        frozen = super()._create_new_trial(study_id, template_trial)  # type: ignore[misc]
        if template_trial is None and self.owned_births:
            frozen.set_user_attr(WORKER_ATTR, worker_identity())
        return frozen

    def _get_prepared_new_trial(self, study_id: int, template_trial: FrozenTrial | None,
                                session: Any) -> models.TrialModel:
        trial = super()._get_prepared_new_trial(  # type: ignore[misc]
            study_id, template_trial, session)
        if template_trial is None and self.owned_births:  # Optuna's ask: created RUNNING
            self.mark_owner(session, trial.trial_id, new=True)
        return trial

    def mark_owner(self, session: Any, trial_id: int, *, new: bool = False) -> None:
        """Add this worker's mark and a heartbeat to ``session``'s open transaction.

        A trial that existed before (a WAITING one being started) may hold a heartbeat
        row already (a ``Trial`` built on it records one), so that row is renewed.
        """
        self._set_trial_attr_without_commit(  # type: ignore[attr-defined]
            session, models.TrialUserAttributeModel, trial_id, WORKER_ATTR, worker_identity())
        if not is_heartbeat_enabled(self):  # type: ignore[arg-type]
            return
        held = None if new else models.TrialHeartbeatModel.where_trial_id(trial_id, session)
        if held is None:
            session.add(models.TrialHeartbeatModel(trial_id=trial_id))
        else:
            held.heartbeat = session.execute(sqlalchemy.func.now()).scalar()


class OwnedBirthJournalStorage(JournalStorage):
    """Optuna's Journal storage whose new RUNNING trials carry their worker's mark in the
    record that creates them."""

    owned_births = True

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        if template_trial is None and self.owned_births:
            template_trial = FrozenTrial(
                number=-1, state=TrialState.RUNNING, value=None,
                datetime_start=datetime.now(UTC), datetime_complete=None, params={},
                distributions={}, user_attrs={WORKER_ATTR: worker_identity()},
                system_attrs={}, intermediate_values={}, trial_id=-1)
        return super().create_new_trial(study_id, template_trial)
