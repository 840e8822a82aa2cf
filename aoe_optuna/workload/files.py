"""Reading a workload file (model config, shape list, profile), and the one error each
unreadable one raises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 64 << 20  # a profile of a long run is tens of MB; more is not a workload file


class WorkloadFileError(ValueError):
    """A workload file that cannot be used.

    ``str(e)`` is one line: ``<file>: <where>: expected <what>, got <what>``,
    where ``<where>`` is a key (``key 'hidden_size'``) or a row (``row 7,
    column 'Input Shapes'``).
    """

    def __init__(self, source: str, where: str, expected: str, got: str = "") -> None:
        self.source = source
        self.where = where
        self.expected = expected
        self.got = got
        text = f"{source}: {where}: expected {expected}" + (f", got {got}" if got else "")
        super().__init__(" ".join(text.split()))


def shown(value: Any, limit: int = 60) -> str:
    """A short one-line rendering of a value from a file, for error messages."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def checked_file(path: str | Path, what: str) -> Path:
    """``path``, once it is an existing file under :data:`MAX_FILE_BYTES` (a ``what``:
    "a Hugging Face config.json", ...)."""
    path = Path(path)
    if not path.is_file():  # a FIFO is refused here: reading one waits for a writer
        got = ("a folder" if path.is_dir() else "not a regular file" if path.exists()
               else "no such file")
        raise WorkloadFileError(str(path), "file", f"{what} (an existing file)", got)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise WorkloadFileError(str(path), "file", f"{what} under {MAX_FILE_BYTES >> 20} MiB",
                                f"{size} bytes")
    return path


def not_utf8(path: str | Path, exc: UnicodeDecodeError) -> WorkloadFileError:
    """The error of a file that is not UTF-8 text."""
    return WorkloadFileError(str(path), "file", "UTF-8 text",
                             f"a byte that is not ({exc.reason})")


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of ``path`` (a ``what``: "a Hugging Face config.json", ...)."""
    path = checked_file(path, what)
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc) from None


def read_json(path: str | Path, what: str) -> Any:
    """The parsed JSON of ``path``: too deep a nesting is a bad file, not a crash."""
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkloadFileError(str(path), f"line {exc.lineno}", "valid JSON", exc.msg) from None
    except RecursionError:
        raise WorkloadFileError(str(path), "document", "JSON of ordinary nesting depth",
                                "arrays or objects nested too deeply") from None
