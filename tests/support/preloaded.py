"""``aoe-tune`` in a process of its own, forked from a server that has its modules loaded.

Tests that start many short runs (the fault matrix: one killed run per write point and
storage; runs started together on one new storage) spent most of their CPU on each new
interpreter's imports, ~0.7 s a run. Here each run is still a process of its own (its
pid, its storage connections, its exit status; a SIGKILL at a fault point kills it
alone), forked from Python's forkserver with ``aoe_optuna.cli.main`` already imported;
its working folder, environment, argv and standard streams are set in the child before
``main`` runs. Module state read from the environment at import would be the server's:
the package reads its settings (``AOE_*``, ``TMPDIR``) when a run asks. Tests of the
console script itself, of terminals, of signals sent from outside and of the worker
processes a run starts keep real ``aoe-tune`` processes.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["aoe_optuna.cli.main", "aoe_optuna.study.session",
                                 "aoe_optuna.study.storage.opening"])


def _run_main(argv: list[str], cwd: str, env: dict[str, str], out: str, err: str,
              before: Callable[[], None] | None) -> None:
    """The child: the folder, environment, argv and streams of a process started with
    them, then ``main``; its return value is the exit status."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # TMPDIR as this run has it
    sys.argv = ["aoe-tune", *argv]
    sys.stdout.flush()
    sys.stderr.flush()
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    if before is not None:
        before()
    from aoe_optuna.cli.main import main

    try:
        sys.exit(main(argv))
    finally:  # multiprocessing ends its children with os._exit: run what an exit runs
        atexit._run_exitfuncs()


class ForkedRun:
    """One started run: :meth:`wait` gives what ``subprocess.run`` would."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
                 before: Callable[[], None] | None = None) -> None:
        self.argv = ["aoe-tune", *argv]
        self._folder = tempfile.TemporaryDirectory()
        self._out = Path(self._folder.name) / "out"
        self._err = Path(self._folder.name) / "err"
        self._child = _CONTEXT.Process(
            target=_run_main,
            args=(list(argv), str(cwd), dict(env), str(self._out), str(self._err), before))
        self._child.start()

    @property
    def pid(self) -> int:
        assert self._child.pid is not None
        return self._child.pid

    def wait(self, timeout: float) -> subprocess.CompletedProcess[str]:
        """Its exit status (negative: the signal that ended it), stdout and stderr."""
        try:
            self._child.join(timeout)
            if self._child.exitcode is None:
                self._child.kill()
                self._child.join()
                raise subprocess.TimeoutExpired(self.argv, timeout)
            return subprocess.CompletedProcess(self.argv, self._child.exitcode,
                                               _read(self._out), _read(self._err))
        finally:
            self._folder.cleanup()


def aoe_tune_forked(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None,
                    timeout: float = 300, before: Callable[[], None] | None = None
                    ) -> subprocess.CompletedProcess[str]:
    """``aoe-tune ARGV`` in a forked process (``env``: its whole environment, the test's
    by default; ``before``: called in the child first, as ``preexec_fn`` is)."""
    return ForkedRun(argv, cwd, os.environ if env is None else env, before).wait(timeout)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""
