"""``aoe-tune`` run in the test's own process: the same ``main``, exit status and output a
process of it gives for a refusal, without the ~1 s of CPU a new interpreter costs."""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from aoe_optuna.cli.main import main


def aoe_tune_here(argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``aoe-tune ARGV`` in ``cwd``: its exit status, stdout and stderr as a process's."""
    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse's own refusals exit
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(["aoe-tune", *argv], code, out.getvalue(),
                                       err.getvalue())
