"""A Journal lock left by a killed process: said within a second, broken when its holder died."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from aoe_optuna.study.journal_file import OwnedSymlinkLock

AOE_TUNE = Path(sys.executable).parent / "aoe-tune"
SPEC = Path(__file__).resolve().parents[2] / "studies" / "qwen25_7b_decode_910b2.json"
HOLDER = """
import sys, time
from aoe_optuna.study.journal_file import OwnedSymlinkLock
OwnedSymlinkLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(600)
"""


def _holder(journal: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(journal)],
                            stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


class _TimedLines:
    """A stderr that remembers when each line arrived."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        self.lines.append((time.monotonic(), text))
        return len(text)

    def flush(self) -> None:
        pass


def _tune(journal: Path, n_trials: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AOE_TUNE), "--config", str(SPEC), "--storage", str(journal),
                           "--study-name", "s", "--sampler", "random",
                           "--n-trials", str(n_trials)],
                          capture_output=True, text=True, cwd=journal.parent, timeout=300)


def test_a_lock_left_by_a_killed_run_is_broken_at_once(tmp_path: Path) -> None:
    journal = tmp_path / "j.log"
    assert _tune(journal, 2).returncode == 0
    holder = _holder(journal)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert os.path.lexists(f"{journal}.lock")

    started = time.monotonic()
    run = _tune(journal, 4)
    took = time.monotonic() - started

    assert run.returncode == 0, run.stderr
    assert f"removed the journal lock left by pid {holder.pid}" in run.stderr
    assert took < 30  # Optuna alone waits its 30 s grace period before breaking it


def test_a_live_holder_is_named_and_not_broken(tmp_path: Path) -> None:
    journal = tmp_path / "j.log"
    journal.touch()
    holder = _holder(journal)
    try:
        waiter = OwnedSymlinkLock(str(journal))
        assert not waiter._break_if_dead()
        assert waiter._describe_owner() == f"held by pid {holder.pid} on " \
            f"{waiter._owner()['host']}"
        assert os.path.lexists(f"{journal}.lock")
    finally:
        holder.kill()
        holder.wait()


def test_waiting_on_an_unknown_holder_is_said_within_a_second(tmp_path: Path) -> None:
    journal = tmp_path / "j.log"
    journal.touch()
    os.symlink(journal, f"{journal}.lock")  # as a plain Optuna process holds it
    threading.Timer(2.0, os.unlink, [f"{journal}.lock"]).start()
    err = _TimedLines()
    started = time.monotonic()
    with contextlib.redirect_stderr(err):  # type: ignore[type-var]
        OwnedSymlinkLock(str(journal)).acquire()
    said = [(t, line) for t, line in err.lines if "waiting for the journal lock" in line]
    assert len(said) == 1 and "unknown process" in said[0][1]
    assert said[0][0] - started < 1.0
