"""Checking where a run will write, before its first measurement.

A tuning run on an NPU takes hours; an output path that cannot be written must
be found before it starts, not in a traceback after the last measurement.
"""

from __future__ import annotations

import os
from pathlib import Path

from aoe_optuna.export.kb import KBError, KnowledgeBase


class DestinationError(ValueError):
    """An output path that cannot be written; the message is one line."""


def check_output_file(path: str | os.PathLike[str], option: str) -> None:
    """A file ``option`` will write: not a folder, in a folder that exists and is writable."""
    target = Path(path)
    if target.is_dir():
        raise DestinationError(f"{option}: {target} is a folder; expected a file path")
    folder = target.parent
    if not folder.is_dir():
        raise DestinationError(f"{option}: folder {folder} does not exist")
    if target.exists() and not os.access(target, os.W_OK):
        raise DestinationError(f"{option}: {target} is read-only")
    if not os.access(folder, os.W_OK):
        raise DestinationError(f"{option}: folder {folder} is not writable")


def check_output_folder(path: str | os.PathLike[str], option: str) -> None:
    """A folder ``option`` will write into, made at the end if missing: its nearest
    existing ancestor must be a writable folder."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise DestinationError(f"{option}: {target} is not a folder")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        raise DestinationError(f"{option}: {existing} is not a writable folder")


def check_knowledge_base(path: str | os.PathLike[str], option: str = "--kb") -> None:
    """A knowledge base to merge into: writable, and a knowledge base if it exists."""
    check_output_file(path, option)
    try:
        KnowledgeBase.load(path)
    except KBError as exc:
        raise DestinationError(f"{option}: {exc}") from None
