"""Run a candidate in its own process under a time limit, and classify what went wrong.

Every build and every timed run goes through :func:`run_limited`: the command
runs in a new session (its own process group), so on a time-out the whole
group (a compiler's children, a driver's threads) is killed, never the caller.
:func:`failure_from_run` maps the outcome to a failure kind:

* time limit reached                     -> ``timeout``
* killed by a signal (SIGSEGV, SIGABRT)  -> ``runtime``
* exit status :data:`EXIT_WRONG_RESULT`  -> ``accuracy`` (the driver's check failed)
* any other non-zero exit                -> ``runtime`` (or the kind the caller names,
  e.g. ``build`` for a compiler)

The reason keeps the first lines of the process's stderr (or stdout), which is
where compilers and crashing programs say what happened; the whole output
(:func:`run_log`) travels in ``extra[FAILURE_LOG]``, for the failed trial's
artifact.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aoe_optuna.backends.base import FAILURE_LOG, FailureKind, Measurement

EXIT_WRONG_RESULT = 3  # a driver's convention: "ran, but the result is wrong"
REASON_LINES = 6
REASON_CHARS = 800
LOG_CHARS = 256_000  # a log longer than this keeps its head and its tail


@dataclass(frozen=True)
class RunResult:
    """What one limited run did."""

    argv: tuple[str, ...]
    returncode: int | None  # None when killed for the time limit
    stdout: str
    stderr: str
    elapsed_s: float
    timed_out: bool
    timeout_s: float

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.returncode == 0

    @property
    def signal_name(self) -> str | None:
        """Name of the signal that killed the process, if one did."""
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


def run_limited(
    argv: Sequence[str | os.PathLike[str]],
    timeout_s: float,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> RunResult:
    """Run ``argv`` (no shell) and wait at most ``timeout_s`` seconds for it."""
    args = tuple(str(a) for a in argv)
    start = time.perf_counter()
    proc = subprocess.Popen(
        args,
        cwd=None if cwd is None else Path(cwd),
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    return RunResult(
        argv=args,
        returncode=None if timed_out else proc.returncode,
        stdout=out or "",
        stderr=err or "",
        elapsed_s=time.perf_counter() - start,
        timed_out=timed_out,
        timeout_s=timeout_s,
    )


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def first_lines(text: str, lines: int = REASON_LINES, chars: int = REASON_CHARS) -> str:
    """The first non-empty lines of a message, cut to a readable length."""
    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip()][:lines]
    joined = "\n".join(kept)
    return joined if len(joined) <= chars else joined[: chars - 3] + "..."


def run_log(result: RunResult, chars: int = LOG_CHARS) -> str:
    """The run's command line, outcome, stderr and stdout as one text (head and tail if long)."""
    if result.timed_out:
        outcome = f"killed after its {result.timeout_s:g} s limit"
    elif result.signal_name is not None:
        outcome = f"killed by {result.signal_name}"
    else:
        outcome = f"exit status {result.returncode}"
    text = "\n".join([
        "$ " + shlex.join(result.argv),
        f"{outcome} after {result.elapsed_s:.2f} s",
        "--- stderr ---", result.stderr.rstrip(),
        "--- stdout ---", result.stdout.rstrip(), "",
    ])
    if len(text) <= chars:
        return text
    half = chars // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters left out ...]\n{text[-half:]}"


def failure_from_run(
    result: RunResult,
    what: str,
    nonzero_kind: FailureKind = "runtime",
    cost_s: float | None = None,
) -> Measurement | None:
    """A failed Measurement for a run that did not succeed, or None when it did.

    ``what`` names the step in the reason ("build", "run"); ``nonzero_kind`` is
    the kind of a plain non-zero exit (``build`` for a compiler).
    """
    if result.ok:
        return None
    cost = result.elapsed_s if cost_s is None else cost_s
    log = {FAILURE_LOG: run_log(result)}
    message = first_lines(result.stderr) or first_lines(result.stdout)
    if result.timed_out:
        return Measurement.failure(
            "timeout", f"{what} exceeded its {result.timeout_s:g} s limit and was killed", cost,
            extra=log,
        )
    sig = result.signal_name
    if sig is not None:
        reason = f"{what} crashed ({sig})" + (f": {message}" if message else "")
        return Measurement.failure("runtime", reason, cost, extra=log)
    kind: FailureKind = "accuracy" if result.returncode == EXIT_WRONG_RESULT else nonzero_kind
    if kind == "accuracy" and nonzero_kind == "build":
        kind = "build"  # a compiler's exit 3 means nothing special
    reason = f"{what} failed (exit {result.returncode})" + (f": {message}" if message else "")
    return Measurement.failure(kind, reason, cost, extra=log)
