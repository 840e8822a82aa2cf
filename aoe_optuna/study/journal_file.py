"""Optuna's Journal file, opened so that a killed writer costs nothing.

Two things a SIGKILL or a full disk leaves behind:

* a torn tail: a last record cut midway (or bytes that do not parse). Optuna
  still loads such a file, but its next append lands after the partial line,
  and from then on the file cannot be read at all. :func:`repair_torn_tail`
  keeps a copy of the whole file as ``NAME.torn-<UTC time>``, cuts the file
  back to its last whole record and says so; if that cannot be done safely
  (no room for the copy, a bad record followed by good ones) it refuses and
  changes nothing.
* a stale lock: Optuna's ``NAME.lock`` symlink, which other Optuna processes
  wait on for 30 s before breaking it, silently at our log level.
  :class:`OwnedSymlinkLock` is the same symlink lock (Optuna processes that
  do not know this module still exclude each other with it), plus a note
  ``NAME.lock.owner`` naming the holder's host, pid and the lock's inode. A
  waiter says within a second what it waits for, and breaks the lock at once
  when the note shows its holder is a process on this host that is gone.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from optuna.storages.journal import JournalFileSymlinkLock

from aoe_optuna.atomic_write import host_name, pid_alive

TAIL_BYTES = 1 << 20  # more than any one record Optuna writes
ANNOUNCE_AFTER_S = 0.5  # a lock is held for milliseconds; longer is worth a line


class JournalRepairError(RuntimeError):
    """A torn journal that cannot be repaired safely; the message is one line."""


class OwnedSymlinkLock(JournalFileSymlinkLock):
    """Optuna's symlink lock that records its holder and breaks it when the holder died."""

    def __init__(self, filepath: str, grace_period: int | None = 30) -> None:
        super().__init__(filepath, grace_period)
        self._owner_file = self._lock_file + ".owner"

    def acquire(self) -> bool:
        started = time.monotonic()
        announced = False
        sleep_s = 0.001
        while True:
            try:
                os.symlink(self._lock_target_file, self._lock_file)
            except FileExistsError:
                if self._break_if_dead():
                    continue
                if not announced and time.monotonic() - started > ANNOUNCE_AFTER_S:
                    print(f"storage {self._lock_target_file}: waiting for the journal lock "
                          f"{self._lock_file}, {self._describe_owner()}", file=sys.stderr,
                          flush=True)
                    announced = True
                if self.grace_period is not None and \
                        time.monotonic() - started > self.grace_period:
                    return super().acquire()  # Optuna's own break after its grace period
                time.sleep(sleep_s)
                sleep_s = min(sleep_s * 2, 0.1)
                continue
            self._write_owner()
            return True

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self._owner_file)
        super().release()

    # ------------------------------------------------------------- owner note
    def _write_owner(self) -> None:
        """Name this process as the holder; no fsync: a lost note only means 'unknown'."""
        note = {"host": host_name(), "pid": os.getpid(), "ino": os.lstat(self._lock_file).st_ino}
        tmp = f"{self._owner_file}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(note, fh)
            os.replace(tmp, self._owner_file)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def _owner(self) -> dict | None:
        """The note of the current lock's holder, None when it is unknown."""
        try:
            with open(self._owner_file, encoding="utf-8") as fh:
                note = json.load(fh)
            ino = os.lstat(self._lock_file).st_ino
        except (OSError, ValueError):
            return None
        if not isinstance(note, dict) or note.get("ino") != ino:
            return None  # a note of an earlier lock: the holder died before writing its own
        return note

    def _describe_owner(self) -> str:
        note = self._owner()
        if note is None:
            return (f"held by an unknown process (Optuna breaks it after "
                    f"{self.grace_period} s without release)")
        return f"held by pid {note['pid']} on {note['host']}"

    def _break_if_dead(self) -> bool:
        """Remove the lock if its holder ran on this host and is gone; whether it did."""
        note = self._owner()
        if note is None or note.get("host") != host_name() or pid_alive(int(note.get("pid", 0))):
            return False
        taken = f"{self._lock_file}.{uuid.uuid4()}.broken"
        try:
            os.rename(self._lock_file, taken)  # atomic: one waiter takes it
        except OSError:
            return False
        if os.lstat(taken).st_ino != note["ino"]:  # a live process locked it in between
            os.rename(taken, self._lock_file)
            return False
        os.unlink(taken)
        with contextlib.suppress(OSError):
            os.unlink(self._owner_file)
        print(f"storage {self._lock_target_file}: removed the journal lock left by pid "
              f"{note['pid']}, which is no longer running", file=sys.stderr, flush=True)
        return True


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
