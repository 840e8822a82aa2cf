"""The knowledge base as one file that many processes update at once.

Every update holds an exclusive ``flock`` on a lock file beside the knowledge base
(``.NAME.lock``) while it re-reads the file, merges its entries and writes it
atomically, so two exports that meet both land: the second merges into what the first
wrote, instead of writing over it from the copy it read before (a lost update).
The lock is :func:`aoe_optuna.lock_file.removed_on_release` (``fcntl.flock``, which
the kernel releases when a writer dies, and a lock file its holder removes), with the
holder's host and pid written into it for the message a waiter that gives up prints.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from aoe_optuna.atomic_write import host_name, write_target
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_c_header import write_c_header
from aoe_optuna.export.kb_entry import KBError
from aoe_optuna.lock_file import LockWaitTimeout, removed_on_release

T = TypeVar("T")
LOCK_TIMEOUT_S = 60.0  # an update takes milliseconds; a lock held this long is stuck


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
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(
                removed_on_release(path, timeout_s, f"{host_name()} {os.getpid()}\n"))
        except LockWaitTimeout as exc:
            raise TimeoutError(f"{kb_path}: another process ({_holder(exc.note)}) has held "
                               f"the knowledge base's lock {path} for over "
                               f"{timeout_s:g} s") from None
        except OSError as exc:  # named as the knowledge base, the file the user gave
            raise OSError(exc.errno, exc.strerror, str(kb_path)) from exc
        yield


def _holder(note: str) -> str:
    """Who holds the lock, as its holder wrote it: host and pid."""
    words = note.split()
    return f"host {words[0]}, pid {words[1]}" if len(words) == 2 else "unknown"
