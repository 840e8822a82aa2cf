"""Opening Optuna storages the way a tuning run needs them.

* SQLite (one host): a lock timeout (60 s), so many workers wait instead of
  failing on "database is locked"; heartbeats so a killed worker's trial is
  retried; an enqueued trial started by one worker only (:mod:`.sqlite_pop`).
* A plain path ending in ``.log``: Optuna's Journal file storage (shared file
  systems; no heartbeats, so stale trials are swept by pid, see
  :mod:`aoe_optuna.study.trials.recovery`).
* PostgreSQL / MySQL URLs (many hosts): RDB storage with heartbeats.
* ``grpc://host:port``: Optuna's gRPC storage proxy
  (``optuna.storages.run_grpc_proxy_server`` in front of one of the above),
  so many hosts share a study through one server process and one database
  connection pool. No heartbeats through the proxy: dead workers are found by
  pid on their own host and by ``--stale-after`` elsewhere.

Every problem (a missing or read-only folder, a locked or corrupt file, an
unreachable server, a wait the environment sets badly, :mod:`.waits`) becomes a
:class:`StorageError` with one line to print.
"""

from __future__ import annotations

import os
import random
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import RDBStorage

from aoe_optuna.study.storage.file_kind import not_a_regular_file
from aoe_optuna.study.storage.journal_file import (
    JournalRepairError,
    JournalWriteError,
    repair_torn_tail,
)
from aoe_optuna.study.storage.journal_lock import JournalLockError, OwnedSymlinkLock
from aoe_optuna.study.storage.redact import redact_text, redact_url
from aoe_optuna.study.storage.sqlite_pop import SQLiteStorage
from aoe_optuna.study.storage.waits import StorageWaits, WaitSettingError, storage_waits
from aoe_optuna.study.storage.write_once import (
    WriteOnceJournalFileBackend,
    WriteOnceRDBStorage,
    WriteOnceSQLiteStorage,
)
from aoe_optuna.study.trials.owned_birth import OwnedBirthJournalStorage
from aoe_optuna.study.trials.recovery import RetryStaleTrial

DEFAULT_STORAGE = "sqlite:///aoe.db"
SCHEMA_RACE_TRIES = 8
_SCHEMA_RACE_SIGNS = ("already exists", "UNIQUE constraint failed", "duplicate key",
                      "UniqueViolation")


class StorageError(RuntimeError):
    """A storage that cannot be opened or written; the message is one line."""


def open_storage(url: str) -> optuna.storages.BaseStorage:
    """Open ``url`` (an Optuna storage URL, or a path ending in ``.log``)."""
    try:
        waits = storage_waits()
    except WaitSettingError as exc:
        raise StorageError(str(exc)) from None
    if url.endswith(".log") and "://" not in url:
        return _journal(Path(url), waits)
    if url.startswith("grpc://"):
        return _grpc(url, waits)
    if url.startswith("sqlite:///"):
        _check_sqlite_path(url)
        engine_kwargs = {"connect_args": {"timeout": waits.sqlite_lock_timeout_s}}
    elif url.startswith(("postgresql", "mysql")):
        engine_kwargs = {"pool_pre_ping": True}
        if url.startswith("postgresql"):
            engine_kwargs["connect_args"] = {"connect_timeout": 10}
    elif "://" in url:
        engine_kwargs = {}
    else:
        raise StorageError(
            f"storage {url!r}: expected an Optuna URL (sqlite:///aoe.db, "
            "postgresql://user@host/db) or a journal file path ending in .log"
        )
    kind = WriteOnceSQLiteStorage if url.startswith("sqlite:///") else WriteOnceRDBStorage
    wal = url.startswith("sqlite:///") and _wal_is_ours(url[len("sqlite:///"):])
    for attempt in range(SCHEMA_RACE_TRIES):
        try:
            storage = kind(
                url,
                engine_kwargs=engine_kwargs,
                heartbeat_interval=waits.heartbeat_s,
                grace_period=waits.grace_period_s,
                heartbeat_stale_trial_callback=RetryStaleTrial(),
            )
            break
        except Exception as exc:  # sqlalchemy raises many kinds; all mean "cannot open"
            if attempt + 1 < SCHEMA_RACE_TRIES and _lost_schema_race(exc):
                time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
                continue
            raise StorageError(
                f"storage {redact_url(url)}: cannot open ({_first_line(exc, url)})") from None
    if wal:
        _fast_sqlite(storage)
    _report_background_failures(url)
    return storage


def _report_background_failures(url: str) -> None:
    """A storage write that fails in a background thread (Optuna's heartbeat, when the
    disk fills or the database locks) is one line on stderr, not a thread's traceback:
    the run's own next write meets the same storage and ends the run in one line. One
    hook per process, naming the storage opened last."""
    _background_url[0] = url
    if getattr(threading.excepthook, "aoe_storage_hook", False):
        return
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None and storage_failure(args.exc_value) is not None:
            where = args.thread.name if args.thread is not None else "a thread"
            print(f"warning: a write in the background ({where}) failed: "
                  f"{describe_storage_error(_background_url[0], args.exc_value)}",
                  file=sys.stderr)
            return
        previous(args)

    hook.aoe_storage_hook = True  # type: ignore[attr-defined]
    threading.excepthook = hook


_background_url = [""]


def _lost_schema_race(exc: BaseException) -> bool:
    """Whether opening failed because another process was creating the same empty
    database's tables at the same moment: workers of a cluster start together, and
    Optuna creates the schema with no lock. Opening again finds the tables made."""
    text = " ".join(str(e) for e in (exc, exc.__cause__, exc.__context__) if e is not None)
    return any(sign in text for sign in _SCHEMA_RACE_SIGNS)


def use_wal(storage: optuna.storages.BaseStorage) -> None:
    """Put an SQLite storage in WAL mode now that the run is sure to start (see
    :func:`_fast_sqlite`); a run refused before this point leaves the file's mode as
    the user made it (``optuna create-study`` makes a rollback-journal file)."""
    if isinstance(storage, SQLiteStorage) and not getattr(storage, "_aoe_wal", False):
        _fast_sqlite(storage)


def _wal_is_ours(raw_path: str) -> bool:
    """Whether this run may put the SQLite file at ``raw_path`` in WAL mode.

    Yes for a file this run creates (absent or empty) and for one already in
    WAL mode. An existing file in another journal mode keeps it: the mode is a
    lasting property of the file (WAL needs shared memory, so it fails on a
    network file system, and older tools cannot read it), the user chose it,
    and a run refused after opening the storage must leave the file as it was.
    ``sqlite3 FILE 'PRAGMA journal_mode=WAL'`` opts such a file in.
    """
    if not raw_path or raw_path == ":memory:":
        return False
    try:
        with open(raw_path, "rb") as fh:
            head = fh.read(20)
    except FileNotFoundError:
        return True
    # bytes 18-19 of the header: file format write/read versions, 2 in WAL mode
    return len(head) < 20 or head[18:20] == b"\x02\x02"


def _fast_sqlite(storage: RDBStorage) -> None:
    """WAL journal, fsync at checkpoints only: ~100x cheaper commits.

    Optuna commits every attribute separately (a trial writes ~30 of them), and
    with SQLite's default rollback journal each commit is an fsync (~15 ms
    here). WAL with synchronous=NORMAL survives a killed process (the case
    that matters for resume); only a power loss may drop the last commits.
    """
    from sqlalchemy import event

    # the lock timeout the storage was opened with
    timeout_s = float(storage.engine_kwargs.get("connect_args", {}).get(
        "timeout", StorageWaits().sqlite_lock_timeout_s))

    def on_connect(dbapi_connection: object, _record: object) -> None:
        cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
        _switch_to_wal(cursor, timeout_s)
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    event.listen(storage.engine, "connect", on_connect)
    storage.engine.dispose()  # connections made before the listener reconnect with it
    storage._aoe_wal = True  # type: ignore[attr-defined]


def _switch_to_wal(cursor: Any, timeout_s: float) -> None:
    """Put the file in WAL mode, waiting for other connections to let go.

    The switch needs the file to itself, and SQLite answers "database is
    locked" at once instead of calling the busy handler while another
    connection writes it (Optuna makes the tables before this listener is set):
    workers started together on a new file meet exactly there. A file already
    in WAL mode needs no lock, so only the first switch waits, for at most the
    lock timeout.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.01, 0.05))


def _journal(path: Path, waits: StorageWaits) -> OwnedBirthJournalStorage:
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise StorageError(f"storage {path}: folder {folder} does not exist")
    if (problem := not_a_regular_file(path)) is not None:
        hint = f"; name a journal file in it, e.g. {path / 'aoe.log'}" if path.is_dir() else ""
        raise StorageError(f"storage {path}: {problem}{hint}")
    if (path.exists() and not os.access(path, os.W_OK)) or not os.access(folder, os.W_OK):
        raise StorageError(f"storage {path}: not writable")
    lock = OwnedSymlinkLock(str(path), grace_period=waits.journal_grace_s)
    try:
        repaired = repair_torn_tail(path, lock)
    except JournalRepairError as exc:
        raise StorageError(str(exc)) from None
    except (JournalLockError, OSError) as exc:
        raise StorageError(f"storage {path}: cannot repair its torn tail "
                           f"({_first_line(exc, str(path))})") from None
    if repaired:
        print(repaired, file=sys.stderr, flush=True)
    try:
        return OwnedBirthJournalStorage(WriteOnceJournalFileBackend(str(path), lock_obj=lock))
    except Exception as exc:
        raise StorageError(f"storage {path}: cannot open ({_first_line(exc, str(path))})") from None


def _grpc(url: str, waits: StorageWaits) -> optuna.storages.BaseStorage:
    host, _, port = url[len("grpc://"):].rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise StorageError(f"storage {redact_url(url)}: expected grpc://HOST:PORT")
    try:
        from optuna.storages import GrpcStorageProxy

        proxy = GrpcStorageProxy(host=host, port=int(port))
        proxy.wait_server_ready(timeout=waits.grpc_ready_s)
    except ImportError:
        raise StorageError(f"storage {redact_url(url)}: needs grpcio and protobuf "
                           "(pip install grpcio protobuf)") from None
    except Exception as exc:
        raise StorageError(f"storage {redact_url(url)}: cannot reach the proxy "
                           f"({_first_line(exc, url)})") from None
    return proxy


def _check_sqlite_path(url: str) -> None:
    raw = url[len("sqlite:///") :]
    if not raw or raw == ":memory:":
        return
    path = Path(raw)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise StorageError(f"storage {redact_url(url)}: folder {folder} does not exist")
    if path.is_dir():
        raise StorageError(f"storage {redact_url(url)}: {path} is a folder; name a database "
                           f"file in it, e.g. sqlite:///{path / 'aoe.db'}")
    if (problem := not_a_regular_file(path)) is not None:
        raise StorageError(f"storage {redact_url(url)}: {problem}")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise StorageError(f"storage {redact_url(url)}: file {path} is read-only")
        with open(path, "rb") as fh:
            head = fh.read(16)
        if head and not head.startswith(b"SQLite format 3"):
            raise StorageError(f"storage {redact_url(url)}: {path} is not an SQLite database")
    if not os.access(folder, os.W_OK):
        raise StorageError(f"storage {redact_url(url)}: folder {folder} is not writable")


def describe_storage_error(url: str, exc: BaseException) -> str:
    """One line for a storage failure during a run (the study is left as it was)."""
    if isinstance(exc, (JournalWriteError, JournalLockError)):  # already one line of ours
        return f"storage {redact_url(url)}: {_first_line(exc, url)}"
    cause = exc.__cause__ or exc.__context__ or exc  # Optuna wraps SQLAlchemy's error
    text = _first_line(getattr(cause, "orig", None) or cause, url)
    hint = ""
    if "malformed" in text:
        hint = " (the database file is damaged)"
    elif "locked" in text:
        # SQLite waits for a lock up to the timeout, but refuses at once where waiting
        # could deadlock (a read turning into a write while another process writes).
        hint = (f" (another process held the database: past the {_lock_wait()} wait, or at "
                "once where waiting could deadlock; run the same command to resume)")
    elif "readonly" in text or "read-only" in text:
        hint = " (the file or its folder is read-only)"
    elif "full" in text or "disk I/O" in text:
        hint = (" (is the disk full? what was stored is kept: free space and run the same "
                "command to resume)")
    return f"storage {redact_url(url)}: {text}{hint}"


def _lock_wait() -> str:
    """The SQLite lock timeout the environment sets, as the hint words it."""
    try:
        return f"{storage_waits().sqlite_lock_timeout_s:g} s"
    except WaitSettingError:
        return "lock timeout's"


def storage_failure(exc: BaseException) -> BaseException | None:
    """The storage's error behind ``exc``, if any: a failed write mid-run (locked,
    read-only, disk full), which Optuna may have replaced by an ``AssertionError``
    ("Should not reach.") raised while handling it."""
    from optuna.exceptions import StorageInternalError
    from sqlalchemy.exc import SQLAlchemyError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, (SQLAlchemyError, StorageInternalError)):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _first_line(exc: BaseException, url: str) -> str:
    """The first line of a driver's message, any secret of ``url`` in it hidden."""
    text = redact_text(str(exc), url).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
