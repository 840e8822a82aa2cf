"""Whether a storage path can hold a storage file, asked before anything opens it.

A Journal or SQLite path that is a named pipe blocks the first read forever
(the reader waits for a writer), a folder or a symlink loop fails deep in
Optuna or SQLite with a traceback; each is refused in one line instead.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def not_a_regular_file(path: Path) -> str | None:
    """Why ``path`` cannot be a storage file, in a few words (a folder, a FIFO, a symlink
    loop); None when it is a regular file or does not exist yet (a dangling symlink
    included: the file is made at its target)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot use {path} ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"{path} is a folder"
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    return f"{path} is {kind}, not a regular file"


def is_missing(path: Path) -> bool:
    """Whether nothing is at ``path`` yet (a dangling symlink included), as opposed to
    something that cannot be read (a symlink loop), which opening then explains."""
    return not path.exists() and not_a_regular_file(path) is None


def storage_file(url: str) -> Path | None:
    """The file of a SQLite URL or a Journal path (None for servers and memory)."""
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url[len("sqlite:///"):])
    if url.endswith(".log") and "://" not in url:
        return Path(url)
    return None
