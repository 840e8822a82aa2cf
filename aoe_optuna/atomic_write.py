"""Write a file so that readers see the old or the new content, never a half-written one."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write ``text`` (or bytes) to a temporary file next to ``path``, fsync it, then rename
    it over ``path``.

    An error leaves ``path`` as it was and removes the temporary file. A process
    killed mid-write cannot remove its own, so the temporary file's name holds
    the writer's host and pid, and the next write to ``path`` removes those
    whose writer is no longer running (a live writer's file is left alone).
    """
    path = Path(path)
    remove_orphans(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp")
    try:
        os.chmod(tmp, _mode_for(path))
        with (os.fdopen(fd, "wb") if isinstance(text, bytes)
              else os.fdopen(fd, "w", encoding="utf-8", newline="")) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remove_orphans(path: Path) -> list[Path]:
    """Remove the temporary files of writes to ``path`` whose writer on this host died."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(?P<host>[^.]+)\.(?P<pid>\d+)\.[^.]+\.tmp\Z")
    removed = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        match = pattern.match(name)
        if match is None or match["host"] != host_name() or pid_alive(int(match["pid"])):
            continue
        with contextlib.suppress(OSError):
            os.unlink(path.parent / name)
            removed.append(path.parent / name)
    return removed


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{host_name()}.{os.getpid()}."


def host_name() -> str:
    """This host's name as it can sit between dots in a file name."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname()) or "host"


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs here (one we may not signal still runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mode_for(path: Path) -> int:
    """The mode ``path`` has, or the one a new file would get (mkstemp's is 0600)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
