"""Checking where a run will write, before its first measurement.

A tuning run on an NPU takes hours; an output path that cannot be written must
be found before it starts, not in a traceback after the last measurement. Each
check meets what the final write will meet: the path followed through its
symlinks (:func:`aoe_optuna.atomic_write.write_target`), device nodes, FIFOs,
sockets and the kernel's /proc and /sys refused, and a file really created and
removed in the folder, since a writable bit says nothing of a read-only mount or
of /proc.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from aoe_optuna.atomic_write import (
    in_kernel_file_system,
    probe_folder,
    write_error_text,
    write_target,
)
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import KBError

_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


class DestinationError(ValueError):
    """An output path that cannot be written; the message is one line."""


def check_output_file(path: str | os.PathLike[str], option: str) -> None:
    """A file ``option`` will write: a regular file or a new one (through its symlinks),
    not read-only, in an existing folder that a file can be created in."""
    try:
        target = write_target(path)
    except OSError as exc:
        raise DestinationError(f"{option}: {write_error_text(exc)}") from None
    folder = target.parent
    if not folder.is_dir():
        raise DestinationError(f"{option}: folder {folder} does not exist")
    if target.exists() and not os.access(target, os.W_OK):
        raise DestinationError(f"{option}: {path} is read-only")
    try:
        probe_folder(target)
    except OSError as exc:
        raise DestinationError(f"{option}: {_folder_refusal(folder, exc)}") from None


def check_output_folder(path: str | os.PathLike[str], option: str) -> None:
    """A folder ``option`` will write into, made at the end if missing: its nearest
    existing ancestor must be a folder a file can be created in, outside /proc and /sys."""
    try:
        target = Path(os.path.realpath(path))
    except OSError as exc:
        raise DestinationError(f"{option}: {write_error_text(exc)}") from None
    if in_kernel_file_system(target):
        raise DestinationError(f"{option}: {path} is in the kernel's /proc or /sys, not a "
                               "folder to write")
    if target.exists() and not target.is_dir():
        raise DestinationError(f"{option}: {path} is not a folder")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise DestinationError(f"{option}: {existing} is not a writable folder")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".aoe-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise DestinationError(f"{option}: {_folder_refusal(existing, exc)}") from None


def check_knowledge_base(path: str | os.PathLike[str], option: str = "--kb",
                         planned: Iterable[Mapping[str, Any]] = ()) -> None:
    """A knowledge base to merge into: writable, a knowledge base if it exists, and
    holding no entry of another figure under a key of the ``planned`` entries."""
    check_output_file(path, option)
    check_figures(path, planned, option)


def check_figures(path: str | os.PathLike[str], planned: Iterable[Mapping[str, Any]],
                  option: str = "--kb") -> None:
    """The knowledge base (if it exists) reads, and holds no entry of another figure
    under a key of the ``planned`` entries (their key, objective and workload: what a
    run will merge, unless it replaces), so that a refusal comes before anything is
    measured or written."""
    try:
        kb = KnowledgeBase.load(path)  # its errors name the file
    except KBError as exc:
        raise DestinationError(f"{option}: {exc}") from None
    try:
        for entry in planned:
            kb.check_comparable(entry)
    except KBError as exc:
        raise DestinationError(f"{option}: {path}: {exc}") from None


def _folder_refusal(folder: Path, exc: OSError) -> str:
    if exc.errno in _NOT_WRITABLE:
        return f"folder {folder} is not writable ({exc.strerror})"
    return f"cannot create a file in folder {folder}: {exc.strerror}"
