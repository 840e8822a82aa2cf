"""Read a study a running ``aoe-tune`` is still creating, without racing it.

``optuna.load_study`` on a SQLite file creates Optuna's tables when they are not
there yet, so a test that polls a new file while the run creates it writes the
same tables at the same moment: one side then meets ``UNIQUE constraint failed:
alembic_version``. :func:`stored_study` looks at the file read-only first and
loads the study only once the run has stored it."""

from __future__ import annotations

import contextlib
import sqlite3

import optuna


def stored_study(url: str, name: str) -> optuna.Study | None:
    """The study ``name`` once a run has stored it at ``url``; None before that."""
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                row = db.execute("SELECT 1 FROM studies WHERE study_name = ?",
                                 (name,)).fetchone()
        except sqlite3.Error:  # no file yet, or no tables yet
            return None
        if row is None:
            return None
    try:
        return optuna.load_study(study_name=name, storage=url)
    except KeyError:
        return None
