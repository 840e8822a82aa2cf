"""Open an RDB storage this Optuna version set up without loading alembic.

Optuna's ``RDBStorage`` loads alembic and its migration scripts at every open
(``_VersionManager``) to read one row, the schema's revision, and to compare it
with the newest one: about 0.3 s of CPU in a process whose whole 3-trial study
costs 1.8 s, and every worker, resume and ``aoe-tune`` command opens a storage.
A storage whose ``version_info`` row names the running Optuna version was set
up (or upgraded, which rewrites that row) by this version, so its schema is
this version's newest: two plain queries say so. Any other storage (new,
older, newer, not stamped) takes Optuna's own path, alembic and all, with its
checks and messages unchanged.

Optuna builds the version manager inside ``RDBStorage.__init__`` and
``__setstate__`` from a module-level name; :class:`StampReadingOpen` swaps that
name for the duration of those two calls only, under a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import optuna
import sqlalchemy
from optuna.storages._rdb import storage as _rdb_storage

_SWAP_LOCK = threading.RLock()
# Optuna's private class: where a later Optuna renames it, storages open Optuna's way
# (tests/study/test_version_stamp.py then fails, no run does)
_OPTUNAS = getattr(_rdb_storage, "_VersionManager", None)


def stamped_by_this_optuna(engine: sqlalchemy.engine.Engine) -> bool:
    """Whether the storage's schema revision is stamped and its ``version_info`` row
    names the running Optuna version (False when either table is missing)."""
    try:
        with engine.connect() as connection:
            revision = connection.execute(
                sqlalchemy.text("SELECT version_num FROM alembic_version")).scalar()
            library = connection.execute(
                sqlalchemy.text("SELECT library_version FROM version_info")).scalar()
    except sqlalchemy.exc.SQLAlchemyError:
        return False
    return revision is not None and library == optuna.__version__


class _StampReadingVersionManager(_OPTUNAS or object):  # type: ignore[misc]
    """Optuna's version manager, which skips alembic for a storage this version set up."""

    def _init_alembic(self) -> None:
        self.read_from_stamp = stamped_by_this_optuna(self.engine)
        if not self.read_from_stamp:
            super()._init_alembic()

    def check_table_schema_compatibility(self) -> None:
        if not self.read_from_stamp:
            super().check_table_schema_compatibility()


class StampReadingOpen:
    """Mixin for an ``RDBStorage`` subclass: opened (and unpickled) with
    :class:`_StampReadingVersionManager`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with _version_manager(_StampReadingVersionManager):
            super().__init__(*args, **kwargs)

    def __setstate__(self, state: dict[Any, Any]) -> None:
        with _version_manager(_StampReadingVersionManager):
            super().__setstate__(state)  # type: ignore[misc]


@contextmanager
def _version_manager(kind: type) -> Iterator[None]:
    if _OPTUNAS is None:
        yield
        return
    with _SWAP_LOCK:
        saved = _rdb_storage._VersionManager
        _rdb_storage._VersionManager = kind  # type: ignore[misc]
        try:
            yield
        finally:
            _rdb_storage._VersionManager = saved  # type: ignore[misc]
