"""Optuna's Journal file lock, with a holder that can be named and a grace that holds.

The lock is Optuna's ``NAME.lock`` symlink (Optuna processes that do not know
this module still exclude each other with it), plus a note
``NAME.lock.owner`` naming the holder's host, pid and the lock's inode. A
waiter says within a second whom it waits for and when it will stop waiting,
breaks the lock at once when the note shows its holder is a process on this
host that is gone, and otherwise breaks it once the same lock has stood for
the grace period (30 s, Optuna's).

Optuna's own wait (``JournalFileSymlinkLock.acquire``) is not used, because:

* it times the grace by ``os.stat`` of the lock, which follows the symlink to
  the journal: a dangling link (a folder copied after a kill, a relative
  path) fails that stat, and its loop retries at once without sleeping,
  spinning a core forever; a link to another live file restarts the grace at
  every write of that file and is never broken;
* it starts its grace when it starts waiting, so calling it after a grace of
  our own waited twice as long as said (61-66 s for a 30 s grace).

Here the lock's own identity (``lstat``: inode and creation time) is watched,
so the grace starts when a lock is first seen and ends when that lock, not
its target, has stood for the grace period.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import sys
import time
import uuid
from collections.abc import Callable

from optuna.exceptions import StorageInternalError
from optuna.storages.journal import JournalFileSymlinkLock

from aoe_optuna.atomic_write import host_name
from aoe_optuna.process_liveness import pid_alive

ANNOUNCE_AFTER_S = 0.5  # a lock is held for milliseconds; longer is worth a line
LONGEST_SLEEP_S = 0.1
MAX_PID = 2**31 - 1

LockId = tuple[int, int]  # inode, creation time in ns: one lock, not a later one at its path


class JournalLockError(StorageInternalError):
    """A lock path that no process can take or break; the message is one line."""


class OwnedSymlinkLock(JournalFileSymlinkLock):
    """Optuna's symlink lock that records its holder and breaks it when the holder died."""

    def __init__(self, filepath: str, grace_period: int | None = 30) -> None:
        super().__init__(filepath, grace_period)
        self._owner_file = self._lock_file + ".owner"
        self._held: LockId | None = None

    def acquire(self) -> bool:
        started = time.monotonic()
        announced = False
        watched: tuple[LockId, float] | None = None  # the lock seen, since when
        sleep_s = 0.001
        while True:
            try:
                os.symlink(self._lock_target_file, self._lock_file)
            except FileExistsError:
                seen = self._lock_id()
                if seen is None:
                    time.sleep(0.001)
                    continue  # released between the two calls: try again
                now = time.monotonic()
                if watched is None or watched[0] != seen:
                    watched = (seen, now)  # a new holder: its grace starts now
                if self._break_if_dead() or self._break_if_stale(seen, now - watched[1]):
                    sleep_s = 0.001
                    continue
                if not announced and now - started > ANNOUNCE_AFTER_S:
                    self._say(f"waiting for the journal lock {self._lock_file}, "
                              f"{self._describe_owner()}; {self._deadline(now - watched[1])}")
                    announced = True
                time.sleep(sleep_s)
                sleep_s = min(sleep_s * 2, LONGEST_SLEEP_S)
                continue
            try:
                self._held = self._lock_id()
                self._write_owner()
            except BaseException:
                self.release()
                raise
            return True

    def release(self) -> None:
        """Remove the lock if it is still this process's (a holder paused past the grace
        may find another's lock in its place, which it must leave)."""
        held, self._held = self._held, None
        if held is not None and self._lock_id() != held:
            return
        if self._owner() is not None:  # the note of this lock, so this process's own
            with contextlib.suppress(OSError):
                os.unlink(self._owner_file)
        super().release()

    # ------------------------------------------------------------- owner note
    def _write_owner(self) -> None:
        """Name this process as the holder; no fsync: a lost note only means 'unknown'."""
        if self._held is None:
            return
        note = {"host": host_name(), "pid": os.getpid(), "ino": self._held[0]}
        tmp = f"{self._owner_file}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(note, fh)
            os.replace(tmp, self._owner_file)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def _owner(self) -> dict | None:
        """The note of the current lock's holder; None when it is unknown, belongs to an
        earlier lock (the holder died before writing its own), or does not parse."""
        try:
            with open(self._owner_file, encoding="utf-8") as fh:
                note = json.load(fh)
            ino = os.lstat(self._lock_file).st_ino
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(note, dict):
            return None
        host, pid = note.get("host"), note.get("pid")
        if not isinstance(host, str) or type(pid) is not int or not 0 < pid <= MAX_PID:
            return None
        return note if note.get("ino") == ino else None

    def _describe_owner(self) -> str:
        note = self._owner()
        if note is None:
            return "held by an unknown process"
        return f"held by pid {note['pid']} on {note['host']}"

    def _deadline(self, held_for_s: float) -> str:
        if self.grace_period is None:
            return "no grace period: waiting until it is released"
        left = math.ceil(max(self.grace_period - held_for_s, 0.0))
        return f"it is broken if not released within {left} s"

    # ---------------------------------------------------------------- breaking
    def _lock_id(self) -> LockId | None:
        """The lock now at the path (without following it); None when there is none.

        A folder there is no lock any process can take or break: an error."""
        try:
            st = os.lstat(self._lock_file)
        except FileNotFoundError:
            return None
        if stat.S_ISDIR(st.st_mode):
            raise JournalLockError(f"{self._lock_file} is a folder, not a journal lock; no "
                                   "process can write the journal while it is there: remove it")
        return st.st_ino, st.st_mtime_ns

    def _break_if_dead(self) -> bool:
        """Remove the lock if its holder ran on this host and is gone; whether it did."""
        note = self._owner()
        if note is None or note["host"] != host_name() or pid_alive(note["pid"]):
            return False
        if not self._take(lambda taken: taken[0] == note["ino"]):
            return False
        with contextlib.suppress(OSError):
            os.unlink(self._owner_file)
        self._say(f"removed the journal lock left by pid {note['pid']}, "
                  "which is no longer running")
        return True

    def _break_if_stale(self, seen: LockId, held_for_s: float) -> bool:
        """Remove the lock ``seen`` once it has stood for the grace period; whether it did."""
        if self.grace_period is None or held_for_s < self.grace_period:
            return False
        who = self._describe_owner()
        if not self._take(lambda taken: taken == seen):
            return False
        self._say(f"broke the journal lock {self._lock_file}, {who}, not released for "
                  f"{held_for_s:.0f} s (the grace period is {self.grace_period} s)")
        return True

    def _take(self, is_expected: Callable[[LockId], bool]) -> bool:
        """Remove the lock by an atomic rename (one waiter takes it), if the lock taken is
        the one expected; another is put back where the path is still free."""
        taken = f"{self._lock_file}.{uuid.uuid4().hex}.broken"
        try:
            os.rename(self._lock_file, taken)
        except OSError:
            return False  # released or taken by another waiter meanwhile
        st = os.lstat(taken)
        if not is_expected((st.st_ino, st.st_mtime_ns)):
            with contextlib.suppress(OSError):
                os.link(taken, self._lock_file, follow_symlinks=False)
            with contextlib.suppress(OSError):
                os.unlink(taken)
            return False
        with contextlib.suppress(OSError):
            os.unlink(taken)
        return True

    def _say(self, line: str) -> None:
        print(f"storage {self._lock_target_file}: {line}", file=sys.stderr, flush=True)
