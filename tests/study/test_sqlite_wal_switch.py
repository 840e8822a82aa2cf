"""The switch of a new SQLite file to WAL waits for other connections.

Workers started together on a new file each switch it to WAL as they connect;
SQLite refuses the switch at once ("database is locked", no busy wait) while
another connection writes the file (Optuna creates the tables before the WAL
switch is set up), and one worker in about 50 rounds of four
exited 2 there.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from aoe_optuna.study.storage.opening import _switch_to_wal


def _writer_holding_the_file(path: Path) -> sqlite3.Connection:
    """A connection in the middle of a write, as a worker creating the tables is."""
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE t (x INTEGER)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t VALUES (1)")  # a reserved lock until COMMIT
    return writer


def test_sqlite_refuses_the_switch_at_once_while_another_connection_writes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "new.db"
    writer = _writer_holding_the_file(path)
    other = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        other.execute("PRAGMA journal_mode=WAL")
    assert time.monotonic() - started < 1.0  # the busy timeout was not used
    writer.close()


def test_the_switch_waits_for_the_writer_and_happens(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    writer = _writer_holding_the_file(path)
    threading.Timer(0.5, writer.execute, args=("COMMIT",)).start()
    other = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    _switch_to_wal(other.cursor(), timeout_s=5.0)
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_already_in_wal_mode_needs_no_lock(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    first = sqlite3.connect(path, isolation_level=None)
    first.execute("PRAGMA journal_mode=WAL")
    first.execute("CREATE TABLE t (x INTEGER)")
    first.execute("BEGIN EXCLUSIVE")  # even a writer holding the file does not block it
    other = sqlite3.connect(path, timeout=0.1, isolation_level=None)
    started = time.monotonic()
    _switch_to_wal(other.cursor(), timeout_s=5.0)
    assert time.monotonic() - started < 1.0
    first.execute("COMMIT")


def test_an_immediate_refusal_is_not_described_as_a_long_wait(tmp_path: Path) -> None:
    """The one line for a "locked" error is true of SQLite's immediate refusals too."""
    from aoe_optuna.study.storage.opening import describe_storage_error

    path = tmp_path / "new.db"
    writer = _writer_holding_the_file(path)
    other = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError) as refused:
        other.execute("PRAGMA journal_mode=WAL")
    writer.execute("COMMIT")
    line = describe_storage_error(f"sqlite:///{path}", refused.value)
    assert "database is locked" in line and "at once where waiting could deadlock" in line
    assert "run the same command to resume" in line
