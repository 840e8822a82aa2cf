"""The writes after the last measurement: when one fails (a full disk, a deleted folder,
a knowledge base whose lock is stuck), the run says so in one line, that the
measurements are stored in the study, and the command that writes the files again.

The command is made before the first measurement, with absolute paths, because a
relative one means nothing once the working folder is gone.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterator, Sequence

from aoe_optuna.atomic_write import write_error_text


class FinalWriteError(Exception):
    """A write after the measurements failed; the message is one line, the study is kept."""


def again_command(words: Sequence[str], paths: dict[str, str | None]) -> str:
    """``words`` then each option of ``paths`` that is given, its path made absolute."""
    parts = list(words)
    for option, path in paths.items():
        if path is not None:
            parts += [option, os.path.abspath(path) if path else path]
    return shlex.join(parts)


@contextlib.contextmanager
def measurements_kept(study: str, storage_url: str, again: str) -> Iterator[None]:
    """Turn a failed write into :class:`FinalWriteError` naming the study and ``again``."""
    from aoe_optuna.export.kb_entry import KBError

    try:
        yield
    except (OSError, KBError) as exc:  # KBError: a knowledge base changed since the check
        what = write_error_text(exc) if isinstance(exc, OSError) else str(exc)
        raise FinalWriteError(
            f"{' '.join(what.split())}; the measurements are stored in study {study} of "
            f"{storage_url}; write the files again with: {again}") from None
