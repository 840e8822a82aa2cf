"""Open an RDB storage this Optuna version set up without loading alembic.

Optuna's ``RDBStorage`` loads alembic and its migration scripts at every open
(``_VersionManager``) to read one row, the schema's revision, and to compare it
with the newest one: about 0.3 s of CPU in a process whose whole 3-trial study
costs 1.8 s, and every worker, resume and ``aoe-tune`` command opens a storage.
A storage whose ``version_info`` row names the running Optuna version was set
up (or upgraded, which rewrites that row) by this version, so its schema is
this version's newest: two plain queries say so. A new storage (its tables just
made by this version, no revision stamped yet) is stamped with the newest
revision of Optuna's migration scripts, read from their files, in the table
alembic would make. Any other storage (older, newer, not stamped by an older
version) takes Optuna's own path, alembic and all, with its checks and
messages unchanged; so does a new one wherever the newest revision cannot be
read or the stamp fails (a concurrent opener got there first, say).

Optuna builds the version manager inside ``RDBStorage.__init__`` and
``__setstate__`` from a module-level name; :class:`StampReadingOpen` swaps that
name for the duration of those two calls only, under a lock.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy
from optuna.storages._rdb import models as _rdb_models
from optuna.storages._rdb import storage as _rdb_storage

_SWAP_LOCK = threading.RLock()
# Optuna's private class: where a later Optuna renames it, storages open Optuna's way
# (tests/study/test_version_stamp.py then fails, no run does)
_OPTUNAS = getattr(_rdb_storage, "_VersionManager", None)


# Optuna's migration scripts: each names its ``revision`` and the ``down_revision`` it
# follows; the newest is the one no other script follows
_MIGRATIONS = Path(_rdb_storage.__file__).parent / "alembic" / "versions"
_REVISION = re.compile(r"^(down_revision|revision)\s*=\s*(None|[\"'](.+?)[\"'])\s*$", re.M)


def _stamp_of(engine: sqlalchemy.engine.Engine) -> tuple[str | None, str | None, int | None]:
    """The stamped revision, and ``version_info``'s library and schema versions (None
    for what is missing)."""
    revision = library = schema = None
    with engine.connect() as connection:
        try:
            library, schema = connection.execute(sqlalchemy.text(
                "SELECT library_version, schema_version FROM version_info")).one()
        except sqlalchemy.exc.SQLAlchemyError:
            return None, None, None
        try:
            revision = connection.execute(
                sqlalchemy.text("SELECT version_num FROM alembic_version")).scalar()
        except sqlalchemy.exc.SQLAlchemyError:
            connection.rollback()  # PostgreSQL: the failed query ends the transaction
    return revision, library, schema


@functools.cache
def newest_revision() -> str | None:
    """The newest revision of the installed Optuna's migration scripts (what alembic's
    ``get_current_head`` gives), read from their files; None where they cannot be read
    or do not make one line of revisions."""
    revisions: set[str] = set()
    followed: set[str] = set()
    try:
        scripts = sorted(_MIGRATIONS.glob("*.py"))
        for script in scripts:
            names = {m[0]: m[2] for m in _REVISION.findall(script.read_text())}
            if "revision" not in names or "down_revision" not in names:
                return None
            revisions.add(names["revision"])
            if names["down_revision"]:
                followed.add(names["down_revision"])
    except OSError:
        return None
    heads = revisions - followed
    return heads.pop() if len(heads) == 1 and len(revisions) == len(scripts) else None


def _stamp_new(engine: sqlalchemy.engine.Engine, revision: str) -> bool:
    """Stamp ``revision`` where no revision is: the table ``alembic stamp`` makes and its
    one row. False where that fails (another opener stamping at the same time)."""
    table = sqlalchemy.Table(
        "alembic_version", sqlalchemy.MetaData(),
        sqlalchemy.Column("version_num", sqlalchemy.String(32), nullable=False),
        sqlalchemy.PrimaryKeyConstraint("version_num", name="alembic_version_pkc"))
    try:
        with engine.begin() as connection:
            table.create(connection, checkfirst=True)
            if connection.execute(sqlalchemy.select(table.c.version_num)).first() is None:
                connection.execute(table.insert().values(version_num=revision))
    except sqlalchemy.exc.SQLAlchemyError:
        return False
    return True


class _StampReadingVersionManager(_OPTUNAS or object):  # type: ignore[misc]
    """Optuna's version manager, which skips alembic for a storage this version sets or
    set up."""

    def _init_alembic(self) -> None:
        revision, library, schema = _stamp_of(self.engine)
        ours = library == optuna.__version__
        # a storage whose tables this version made and that no revision stamps yet: new
        self.stamped_here = (revision is None and ours
                             and schema == _rdb_models.SCHEMA_VERSION
                             and (newest := newest_revision()) is not None
                             and _stamp_new(self.engine, newest))
        self.read_from_stamp = self.stamped_here or (revision is not None and ours)
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
