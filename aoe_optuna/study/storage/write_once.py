"""Study attributes that the first writer sets for good: a study holds one spec.

Optuna's ``set_study_user_attr`` is an upsert on every storage: the last
writer wins. Two runs that start a new study in the same second with
different specs both read "no spec yet", both write theirs, and both go on to
measure their own problem into one study (14 of 80 rounds of ``scripts/chaos.py
--only specs --rounds 20`` on the four storages before this module). A study's
description must instead be set once, atomically, and read back: the run whose
write did not take sees the other spec and is refused before it writes or
measures anything.

The storages :func:`aoe_optuna.study.storage.opening.open_storage` returns keep the
keys in :data:`WRITE_ONCE_KEYS` this way, so every path through them gets it,
including workers on other hosts through the gRPC proxy (its server opens its
storage with ``open_storage``):

* RDB (SQLite, PostgreSQL, MySQL): a plain INSERT; the table's unique
  (study_id, key) constraint turns the second writer's INSERT into an
  IntegrityError, and the first value stays.
* Journal file: under the journal's own file lock, a record that sets such a
  key is dropped when an earlier record in the file already set it, so every
  replay (of any Optuna process) sees the first value.

A later write of such a key with another value is ignored, not an error
(Optuna's gRPC proxy would turn an error into an opaque one): callers use
:func:`set_once`, which returns what storage holds. Both use Optuna's table
model and journal op codes, pinned with Optuna in constraints.txt.
"""

from __future__ import annotations

import json
from typing import Any

import optuna
import sqlalchemy
from optuna.storages._rdb import models
from optuna.storages.journal._storage import JournalOperation

from aoe_optuna.attrs import (
    KERNEL_SET_OP_ATTR,
    KERNEL_SET_PLAN_ATTR,
    LAYER_OP_ATTR,
    PLAN_ATTR,
    RACE_LEASE_PREFIX,
    SPEC_ATTR,
)
from aoe_optuna.study.storage.journal_file import WholeRecordBackend
from aoe_optuna.study.storage.sqlite_pop import SQLiteStorage
from aoe_optuna.study.storage.version_stamp import StampReadingOpen
from aoe_optuna.study.trials.fault_points import fault_point
from aoe_optuna.study.trials.recovery import ResultKeepingRDBStorage

# What a study is: its spec, an operator run's shape plan, an attention or vector kernel
# study's problem, a kernel-set run's mix and each of its operators. (What follows from
# them, the spec's source file and roofline, is written by the run whose spec was taken,
# after this check.)
WRITE_ONCE_KEYS = frozenset({SPEC_ATTR, PLAN_ATTR, LAYER_OP_ATTR, KERNEL_SET_PLAN_ATTR,
                             KERNEL_SET_OP_ATTR})
# Keys with these prefixes are write-once too: the lease of a study's race
# (aoe_optuna.study.race.lease), one key per race and attempt.
WRITE_ONCE_PREFIXES = (RACE_LEASE_PREFIX,)


def is_write_once(key: str) -> bool:
    """Whether the storages keep ``key`` as its first writer set it."""
    return key in WRITE_ONCE_KEYS or key.startswith(WRITE_ONCE_PREFIXES)


def set_once(study: optuna.Study, key: str, value: Any) -> Any:
    """Store ``value`` under ``key`` unless the study holds one; the value it holds now.

    That is ``value`` when this call wrote it, or another writer's when that one got
    there first (on the storages of ``open_storage``, even at the same instant).
    """
    if not is_write_once(key):
        raise ValueError(f"{key!r} is not a write-once study attribute")
    held = study.user_attrs.get(key)
    if held is not None:
        return held
    fault_point("write-once")  # a test stops a run here: it read "not set", has not written
    study.set_user_attr(key, value)
    return study.user_attrs.get(key)  # read back from storage: the first writer's


class WriteOnceStudyAttrs:
    """RDBStorage mixin: the keys of :data:`WRITE_ONCE_KEYS` are inserted, never updated."""

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        if not is_write_once(key):
            super().set_study_user_attr(study_id, key, value)  # type: ignore[misc]
            return
        self.get_study_name_from_id(study_id)  # type: ignore[attr-defined]  # KeyError if none
        insert = sqlalchemy.insert(models.StudyUserAttributeModel.__table__).values(
            study_id=study_id, key=key, value_json=json.dumps(value))
        session = self.scoped_session()  # type: ignore[attr-defined]
        try:
            session.execute(insert)
            session.commit()
        except sqlalchemy.exc.IntegrityError:
            session.rollback()  # unique (study_id, key): another writer set it first
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()


class WriteOnceRDBStorage(WriteOnceStudyAttrs, StampReadingOpen, ResultKeepingRDBStorage):
    """PostgreSQL and MySQL storage with write-once study attributes (opened without
    alembic where this Optuna version set it up: ``version_stamp``)."""


class WriteOnceSQLiteStorage(WriteOnceStudyAttrs, StampReadingOpen, SQLiteStorage):
    """SQLite storage with write-once study attributes (opened as above)."""


class WriteOnceJournalFileBackend(WholeRecordBackend):
    """Journal file whose appends drop a write-once key some earlier record already set.

    The check reads the file under the same lock as the append (the backend's
    ``_to_append``), so of two writers the second sees the first's record.
    """

    def _to_append(self, logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not any(_once_keys(log) for log in logs):
            return logs
        taken = self._keys_set()
        kept = []
        for log in logs:
            log = _without(log, taken)
            if log is not None:
                kept.append(log)
                taken.update((log["study_id"], k) for k in _once_keys(log))
        return kept

    def _keys_set(self) -> set[tuple[int, str]]:
        """(study id, key) of every write-once key a record in the file sets."""
        needles = [json.dumps(k).encode() for k in WRITE_ONCE_KEYS]
        needles += [json.dumps(p).encode()[:-1] for p in WRITE_ONCE_PREFIXES]
        taken: set[tuple[int, str]] = set()
        with open(self._file_path, "rb") as fh:
            for line in fh:
                if not any(n in line for n in needles):
                    continue
                try:
                    log = json.loads(line)
                except ValueError:  # a torn last line: nobody's value
                    continue
                if isinstance(log, dict):
                    taken.update((log.get("study_id"), k) for k in _once_keys(log))
        return taken


def _once_keys(log: dict[str, Any]) -> list[str]:
    """The write-once keys a journal record sets on its study."""
    if log.get("op_code") != JournalOperation.SET_STUDY_USER_ATTR:
        return []
    attrs = log.get("user_attr")
    return [k for k in attrs if is_write_once(k)] if isinstance(attrs, dict) else []


def _without(log: dict[str, Any], taken: set[tuple[int, str]]) -> dict[str, Any] | None:
    """``log`` less the write-once keys already set on its study; None when nothing is left."""
    late = {k for k in _once_keys(log) if (log["study_id"], k) in taken}
    if not late:
        return log
    attrs = {k: v for k, v in log["user_attr"].items() if k not in late}
    return {**log, "user_attr": attrs} if attrs else None
