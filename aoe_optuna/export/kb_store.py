"""The knowledge base as one file that many processes update at once.

Every update holds an exclusive ``flock`` on a lock file beside the knowledge base
(``.NAME.lock``) while it re-reads the file, merges its entries and writes it
atomically, so two exports that meet both land: the second merges into what the first
wrote, instead of writing over it from the copy it read before (a lost update).
``fcntl.flock`` of the standard library and no lock package: this Linux tool needs
nothing more, and the kernel releases the lock of a process that dies, so a killed
writer never blocks the next one.

The lock file is removed at the end of each update by the process holding it. A
waiter that then gets the lock of that removed file sees that the name now points
elsewhere (or nowhere) and locks the file the name holds, so two writers never hold
the lock together; a writer killed mid-update leaves its lock file, unlocked, and the
next update removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from aoe_optuna.atomic_write import host_name, write_target
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_c_header import write_c_header
from aoe_optuna.export.kb_entry import KBError

T = TypeVar("T")
LOCK_TIMEOUT_S = 60.0  # an update takes milliseconds; a lock held this long is stuck
_POLL_S = 0.01


def update_knowledge_base(kb_path: str | os.PathLike[str], change: Callable[[KnowledgeBase], T],
                          header: str | os.PathLike[str] | None = None,
                          timeout_s: float = LOCK_TIMEOUT_S) -> T:
    """Under the knowledge base's lock: load it (empty when missing), apply ``change``,
    write it, and write ``header`` from the same entries; ``change``'s result.

    An error of ``change`` (entries that cannot be compared) writes nothing and names
    the file.
    """
    with knowledge_base_lock(kb_path, timeout_s):
        kb = KnowledgeBase.load(kb_path)
        try:
            result = change(kb)
        except KBError as exc:
            raise KBError(f"{kb_path}: {exc}") from None
        kb.save(kb_path)
        if header is not None:
            write_c_header(kb, header)
    return result


def lock_path(kb_path: str | os.PathLike[str]) -> Path:
    """The lock file of a knowledge base: beside its real file, so that every symlink to
    one knowledge base takes the same lock."""
    target = write_target(kb_path)
    return target.with_name(f".{target.name}.lock")


@contextlib.contextmanager
def knowledge_base_lock(kb_path: str | os.PathLike[str],
                        timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the knowledge base's exclusive lock; TimeoutError after ``timeout_s`` of
    waiting (an OSError, as every other failure of the write)."""
    path = lock_path(kb_path)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fd = _open(path)
        except OSError as exc:  # named as the knowledge base, the file the user gave
            raise OSError(exc.errno, exc.strerror, str(kb_path)) from exc
        try:
            if not _lock(fd, deadline):
                raise TimeoutError(f"{kb_path}: another process ({_holder(fd)}) has held "
                                   f"the knowledge base's lock {path} for over "
                                   f"{timeout_s:g} s")
        except BaseException:
            os.close(fd)
            raise
        if _names(path, fd):
            break
        os.close(fd)  # its holder removed that file as we waited: lock the one there now
    try:
        with contextlib.suppress(OSError):  # only a note for waiters
            os.ftruncate(fd, 0)
            os.write(fd, f"{host_name()} {os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)  # still held: a waiter on this file sees it gone and retries
        os.close(fd)


def _open(path: Path) -> int:
    """The lock file, made if missing; read-only where another user's writer, killed,
    left it (a lock needs no write access)."""
    flags = os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | flags, 0o666)
    except PermissionError:
        return os.open(path, os.O_RDONLY | flags, 0o666)


def _lock(fd: int, deadline: float) -> bool:
    """Take the exclusive lock of ``fd``, polling until ``deadline``; whether it was taken."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file ``fd`` is open on."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it: host and pid."""
    with contextlib.suppress(OSError):
        text = os.pread(fd, 200, 0).decode(errors="replace").split()
        if len(text) == 2:
            return f"host {text[0]}, pid {text[1]}"
    return "unknown"
