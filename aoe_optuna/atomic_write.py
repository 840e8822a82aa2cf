"""Write a user's file so that readers see the old or the new content, never a half-written
one, and so that the write lands where the user meant it.

The path is followed through its symlinks: the link stays a link and its target gets the
new content (the temporary file sits beside the target, so the rename stays on one file
system). What is not a regular file is refused rather than replaced by one: a device
node (as root, replacing ``/dev/full`` by a file breaks every program that uses it), a
FIFO, a socket, a folder, and anything under /proc or /sys, whose files are the kernel's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import socket
import stat
import tempfile
from pathlib import Path

from aoe_optuna.process_liveness import pid_alive

KERNEL_FILE_SYSTEMS = (Path("/proc"), Path("/sys"))


class SpecialFileError(OSError):
    """A path a write must not replace: not a regular file, or a file of /proc or /sys."""

    def __init__(self, path: str | os.PathLike[str], what: str) -> None:
        super().__init__(errno.EINVAL, what, str(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def write_atomic(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write ``text`` (or bytes) to a temporary file next to ``path``'s target, fsync it,
    then rename it over the target, keeping the target's mode (and owner, where allowed).

    An error leaves ``path`` as it was and removes the temporary file; an OSError of
    the write names ``path``, not the temporary file. A process killed mid-write
    cannot remove its own, so the temporary file's name holds the writer's host and
    pid, and the next write to ``path`` removes those whose writer is no longer running
    (a live writer's file is left alone).
    """
    target = write_target(path)
    remove_orphans(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=_temp_prefix(target),
                                   suffix=".tmp")
    except OSError as exc:
        raise _naming(exc, path) from exc
    try:
        _keep_owner(tmp, target)
        os.chmod(tmp, _mode_for(target))
        with (os.fdopen(fd, "wb") if isinstance(text, bytes)
              else os.fdopen(fd, "w", encoding="utf-8", newline="")) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _naming(exc, path) from exc
        raise


def write_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` replaces: the end of its chain of symlinks (which may
    not exist yet), absolute.

    Raises :class:`SpecialFileError` for a device node, FIFO, socket, or a path under
    /proc or /sys; IsADirectoryError for a folder; the OSError of the look-up itself
    otherwise (a symlink loop; a relative path once the working folder is deleted).
    """
    target = Path(os.path.realpath(path))
    given = Path(os.path.abspath(path))
    link = "" if target == given else f" (a link to {target})"
    if in_kernel_file_system(given) or in_kernel_file_system(target):  # /proc/self/fd/1 too
        raise SpecialFileError(f"{path}{link}", "a file of the kernel's /proc or /sys, not a "
                               "file to write")
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    if stat.S_ISREG(mode):
        return target
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder; expected a file path",
                                f"{path}{link}")
    kind = ("a character device" if stat.S_ISCHR(mode) else "a block device"
            if stat.S_ISBLK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket"
            if stat.S_ISSOCK(mode) else "not a regular file")
    raise SpecialFileError(f"{path}{link}", f"{kind}, not a regular file a write may replace")


def in_kernel_file_system(path: Path) -> bool:
    """Whether an absolute ``path`` lies in /proc or /sys."""
    return any(path == root or root in path.parents for root in KERNEL_FILE_SYSTEMS)


def probe_folder(target: Path) -> None:
    """Create and remove a temporary file where :func:`write_atomic` would create its own,
    so a folder that only looks writable (a read-only mount, /proc, a full inode table)
    fails now with the OSError the write would meet."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=_temp_prefix(target), suffix=".tmp")
    os.close(fd)
    os.unlink(tmp)


def write_error_text(exc: OSError) -> str:
    """One line for an OSError of a write: the file and the reason, or that the working
    folder is gone (the error then names no file)."""
    if exc.filename is None and not _cwd_exists():
        return "the working folder no longer exists (it was deleted)"
    if isinstance(exc, SpecialFileError) or exc.strerror is None:
        return str(exc)
    return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror


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


def _naming(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """``exc`` with the file the caller writes as its file name (same OSError subclass)."""
    if exc.errno is None or isinstance(exc, SpecialFileError):
        return exc
    return OSError(exc.errno, exc.strerror, str(path))


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{host_name()}.{os.getpid()}."


def host_name() -> str:
    """This host's name as it can sit between dots in a file name."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname()) or "host"


def _keep_owner(tmp: str, target: Path) -> None:
    """Give the new file the old one's owner and group where this process may (root may;
    others may set a group they belong to); otherwise the new file is the writer's."""
    try:
        st = target.stat()
    except OSError:
        return
    with contextlib.suppress(OSError):
        os.chown(tmp, st.st_uid, st.st_gid)


def _mode_for(path: Path) -> int:
    """The mode ``path`` has, or the one a new file would get (mkstemp's is 0600)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
