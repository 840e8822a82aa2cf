"""``aoe-tune`` run in the test's own process: the same ``main``, exit status and output a
process of it gives, without the ~1 s of CPU a new interpreter costs (imports)."""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import optuna

from aoe_optuna.cli.main import main


def aoe_tune_here(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None
                  ) -> subprocess.CompletedProcess[str]:
    """``aoe-tune ARGV`` in ``cwd`` with ``env`` added to the environment: its exit status,
    stdout and stderr as a process's. The working folder, the environment and Optuna's
    log level are the test's again afterwards."""
    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    saved_env = {k: os.environ.get(k) for k in env or {}}
    verbosity = optuna.logging.get_verbosity()
    os.chdir(cwd)
    os.environ.update(env or {})
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse's own refusals exit
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        os.chdir(before)
        for k, v in saved_env.items():
            os.environ.pop(k) if v is None else os.environ.update({k: v})
        optuna.logging.set_verbosity(verbosity)
    return subprocess.CompletedProcess(["aoe-tune", *argv], code, out.getvalue(),
                                       err.getvalue())
