"""SQLite storage whose pop of an enqueued trial is one conditional UPDATE.

Optuna starts a WAITING trial by reading its state, checking it in Python,
then writing RUNNING. On PostgreSQL and MySQL the read takes a row lock
(``FOR UPDATE``); on SQLite it takes none, so two workers can both read
WAITING and both start the same trial. They then measure one config twice,
and the slower one dies at its tell ("Cannot tell a COMPLETE trial"). With
4 processes popping 300 enqueued trials, 19-27 were started twice (one-off
runs of the race in ``tests/study/test_sqlite_pop.py`` on Optuna's own
storage). Writing RUNNING only ``WHERE state = 'WAITING'`` makes the check
and the write one statement under SQLite's write lock: exactly one worker
wins. The same transaction writes the worker's mark and first heartbeat
(:mod:`aoe_optuna.study.trials.owned_birth`), so a worker killed just after
the pop leaves a trial that names it.
Optuna keeps its read-check-write and exposes no hook, hence the subclass;
it uses Optuna's table model (``optuna.storages._rdb.models``), pinned with
Optuna in constraints.txt.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy
from optuna.storages._rdb import models
from optuna.trial import TrialState

from aoe_optuna.study.trials.recovery import ResultKeepingRDBStorage


class SQLiteStorage(ResultKeepingRDBStorage):
    """RDBStorage for SQLite files; only WAITING -> RUNNING differs (see module doc)."""

    def set_trial_state_values(
        self, trial_id: int, state: TrialState, values: Sequence[float] | None = None
    ) -> bool:
        if state != TrialState.RUNNING or values is not None:
            return super().set_trial_state_values(trial_id, state, values)
        trials = models.TrialModel.__table__
        started = (
            sqlalchemy.update(trials)
            .where(trials.c.trial_id == trial_id, trials.c.state == TrialState.WAITING)
            # the column holds naive UTC (Optuna converts on read)
            .values({trials.c.state: TrialState.RUNNING,
                     trials.c.datetime_start: datetime.now(UTC).replace(tzinfo=None)})
        )
        session = self.scoped_session()
        try:
            won = session.execute(started).rowcount == 1
            if won and self.owned_births:
                self.mark_owner(session, trial_id)
            session.commit()
        except BaseException:
            session.rollback()
            raise
        if not won:  # taken by another worker, or finished: as Optuna answers both
            self.check_trial_is_updatable(trial_id, self.get_trial(trial_id).state)
        return won
