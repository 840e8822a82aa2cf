"""Optuna's Journal file, opened so that a killed writer or a full disk costs nothing.

Two things a SIGKILL or a full disk could leave behind:

* a torn tail: a last record cut midway (or bytes that do not parse). Optuna
  still loads such a file, but its next append lands after the partial line,
  and from then on the file cannot be read at all. :func:`repair_torn_tail`
  keeps a copy of the whole file as ``NAME.torn-<UTC time>``, cuts the file
  back to its last whole record and says so; if that cannot be done safely
  (no room for the copy, a bad record followed by good ones) it refuses and
  changes nothing.
* a record cut by a write that failed (a full disk, a file size limit):
  :class:`WholeRecordBackend` writes each append itself and, when the write
  fails, cuts the file back to where this append began (under the lock, so
  those bytes are this process's own, never another's record) and raises
  :class:`JournalWriteError` with one line. Other workers go on appending to
  a file that still parses.

A stale lock is :mod:`aoe_optuna.study.storage.journal_lock`'s business.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from optuna.exceptions import StorageInternalError
from optuna.storages.journal import JournalFileBackend

from aoe_optuna.study.storage.journal_lock import OwnedSymlinkLock

TAIL_BYTES = 1 << 20  # more than any one record Optuna writes
_WRITE_CAUSES = {
    errno.EFBIG: "the file size limit (ulimit -f) was reached",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
}


class JournalRepairError(RuntimeError):
    """A torn journal that cannot be repaired safely; the message is one line."""


class JournalWriteError(StorageInternalError):
    """An append that failed and was undone; the message is one line."""


class WholeRecordBackend(JournalFileBackend):
    """Optuna's Journal file backend whose failed append leaves the file as it was.

    Optuna's append writes through a buffered file: a write that fails midway
    (EFBIG, ENOSPC) leaves part of a record, the next append of any worker
    lands after it, and the file stops loading. Here the records are written
    with ``os.write`` under the lock, and on failure the file is cut back to
    its size when this append began.
    """

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        try:
            self._lock.acquire()
        except OSError as exc:  # a lock that cannot be made (read-only or full folder)
            raise JournalWriteError(_write_failure("cannot take the journal lock", exc)) from exc
        try:
            kept = self._to_append(logs)
            if kept:
                data = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in kept)
                _append_or_undo(self._file_path, data.encode())
        finally:
            self._lock.release()

    def _to_append(self, logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records of ``logs`` to write, decided under the lock (a subclass may drop
        some after reading the file: :mod:`aoe_optuna.study.storage.write_once`)."""
        return logs


def _append_or_undo(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        start = os.fstat(fd).st_size  # the end, since every writer holds the lock
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)  # only this append's own bytes
            raise JournalWriteError(_write_failure("cannot append to the journal", exc)) \
                from exc
    finally:
        os.close(fd)


def _write_failure(what: str, exc: OSError) -> str:
    cause = _WRITE_CAUSES.get(exc.errno or 0)
    reason = exc.strerror or str(exc)
    if cause:
        reason += f": {cause}"
    return (f"{what} ({reason}); what was stored before is kept and loads: run the same "
            "command to resume once there is room")


def repair_torn_tail(path: Path, lock: OwnedSymlinkLock) -> str | None:
    """Cut ``path`` back to its last whole record under the journal lock.

    Returns the line to print when something was cut, None when the file was whole.
    Raises :class:`JournalRepairError` (nothing changed) when it cannot be done safely.
    """
    if not path.exists() or path.stat().st_size == 0:
        return None
    if _ends_whole(path):  # cheap check first, without the lock
        return None
    lock.acquire()
    try:
        return _cut(path)
    finally:
        lock.release()


def _ends_whole(path: Path) -> bool:
    """Whether the file's last line is a whole record (reads only its tail)."""
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - TAIL_BYTES))
        tail = fh.read()
    if not tail.endswith(b"\n"):
        return False
    start = tail.rfind(b"\n", 0, len(tail) - 1) + 1  # 0 when the tail is one line
    return _parses(tail[start:])


def _whole_end(data: bytes) -> int | None:
    """None when ``data`` ends in a whole record, else the end of its last whole record."""
    pieces = data.split(b"\n")
    offset = len(data) - len(pieces[-1])
    torn = pieces[-1] != b""  # a last line without its newline
    i = len(pieces) - 2
    while i >= 0 and not _parses(pieces[i]):
        offset -= len(pieces[i]) + 1
        torn = True
        i -= 1
    return offset if torn else None


def _cut(path: Path) -> str | None:
    data = path.read_bytes()
    keep = _whole_end(data)
    if keep is None:
        return None  # another process repaired it while we waited for the lock
    head = data[:keep]
    if not all(_parses(line) for line in head.split(b"\n")[:-1]):
        raise JournalRepairError(f"storage {path}: a record in the middle of the journal "
                                 "does not parse; left unchanged (not a torn tail)")
    size = len(data)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    copy = path.with_name(f"{path.name}.torn-{stamp}")
    try:
        shutil.copyfile(path, copy)
        with open(copy, "rb+") as fh:
            os.fsync(fh.fileno())
        with open(path, "rb+") as fh:
            fh.truncate(keep)
            os.fsync(fh.fileno())
    except OSError as exc:
        with contextlib.suppress(OSError):
            copy.unlink()
        reason = "no space left" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
        raise JournalRepairError(f"storage {path}: last record is torn and cannot be set "
                                 f"aside ({reason}); left unchanged") from None
    records = head.count(b"\n")
    return (f"storage {path}: last record was torn ({size - keep} bytes set aside, "
            f"{records} whole records kept); the file as it was is in {copy.name}")


def _parses(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
