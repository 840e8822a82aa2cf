"""An exclusive lock on a file that its holder removes: no lock file outlives its use.

``fcntl.flock`` on ``path``: the kernel drops a lock when its holder's file is
closed, so a holder killed with SIGKILL frees it at once. Each acquisition opens
the file anew, so two threads of one process exclude each other too (flock locks
belong to the open file). The holder removes the file before releasing it; a
waiter that then gets the lock of that removed file sees that the name now points
elsewhere (or nowhere) and locks the file the name holds, so two holders never
hold the lock together. A holder killed mid-use leaves its file, unlocked, and the
next holder of the same name removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

POLL_S = 0.01  # how often a waiter tries the lock again


class LockWaitTimeout(TimeoutError):
    """The lock stayed held past the wait; ``note`` is what its holder wrote into it."""

    def __init__(self, path: Path, note: str) -> None:
        super().__init__(f"{path}: held past the wait")
        self.path = path
        self.note = note


@contextlib.contextmanager
def removed_on_release(path: str | os.PathLike[str], timeout_s: float, note: str,
                       poll_s: float = POLL_S) -> Iterator[float]:
    """Hold ``path``'s exclusive lock for the block (made if missing, removed at the
    end) with ``note`` written into it for waiters to read; yields the seconds waited.
    :class:`LockWaitTimeout` after ``timeout_s`` of waiting; an OSError of the folder
    (missing, read-only) as it comes."""
    path = Path(path)
    started = time.monotonic()
    deadline = started + timeout_s
    while True:
        fd = _open(path)
        try:
            if not _lock(fd, deadline, poll_s):
                raise LockWaitTimeout(path, _note(fd))
        except BaseException:
            os.close(fd)
            raise
        if _names(path, fd):
            break
        os.close(fd)  # its holder removed that file as we waited: lock the one there now
    try:
        with contextlib.suppress(OSError):  # only a note for waiters
            os.ftruncate(fd, 0)
            os.pwrite(fd, note.encode(), 0)
        yield time.monotonic() - started
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)  # still held: a waiter on this file sees it gone and retries
        os.close(fd)


def _open(path: Path) -> int:
    """The lock file, made if missing; read-only where another user's holder, killed,
    left it (a lock needs no write access)."""
    flags = os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | flags, 0o666)
    except PermissionError:
        return os.open(path, os.O_RDONLY | flags, 0o666)


def _lock(fd: int, deadline: float, poll_s: float) -> bool:
    """Take the exclusive lock of ``fd``, polling until ``deadline``; whether it was taken."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file ``fd`` is open on."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def _note(fd: int) -> str:
    """What the holder wrote (empty if nothing yet)."""
    with contextlib.suppress(OSError):
        return os.pread(fd, 200, 0).decode(errors="replace").strip()
    return ""
