"""A Journal lock nobody will release: said within a second, broken at once when its
holder died, after the grace announced when the holder is unknown, never by spinning."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from aoe_optuna.study.storage.journal_lock import OwnedSymlinkLock

AOE_TUNE = Path(sys.executable).parent / "aoe-tune"
SPEC = Path(__file__).resolve().parents[2] / "studies" / "qwen25_7b_decode_910b2.json"
HOLDER = """
import sys, time
from aoe_optuna.study.storage.journal_lock import OwnedSymlinkLock
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


# ------------------------------------------------- locks nobody will release: grace, no spin
WAITER = """
import sys, time
from aoe_optuna.study.storage.journal_lock import OwnedSymlinkLock
lock = OwnedSymlinkLock(sys.argv[1], grace_period=3)
wall, cpu = time.monotonic(), time.process_time()
lock.acquire()
print(f"{time.monotonic() - wall:.3f} {time.process_time() - cpu:.3f}", flush=True)
lock.release()
"""


def _wait_in_a_process(journal: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds a process spent taking the lock, and what it said."""
    run = subprocess.run([sys.executable, "-c", WAITER, str(journal)], capture_output=True,
                         text=True, timeout=60, env=os.environ.copy())
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    wall, cpu = (float(x) for x in run.stdout.split())
    return wall, cpu, run.stderr


@pytest.mark.parametrize("target", [
    "nowhere",
    pytest.param("journal", marks=pytest.mark.slow),  # a few seconds each: one stays fast
    pytest.param("another live file", marks=pytest.mark.slow),
])
def test_an_ownerless_lock_is_broken_after_the_grace_said_without_spinning(
        tmp_path: Path, target: str) -> None:
    """A link to nowhere (a folder copied after a kill) made Optuna's wait spin a core
    forever; a link to a file being written restarted its grace at every write; a
    link to the journal itself was broken after twice the grace that was announced."""
    journal = tmp_path / "j.log"
    journal.touch()
    live = tmp_path / "other.log"
    live.touch()
    points_to = {"nowhere": tmp_path / "gone" / "j.log", "journal": journal,
                 "another live file": live}[target]
    os.symlink(points_to, f"{journal}.lock")
    stop = threading.Event()

    def keep_writing() -> None:
        while not stop.wait(0.2):
            with open(live, "a") as fh:
                fh.write("x\n")

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        wall, cpu, err = _wait_in_a_process(journal)
    finally:
        stop.set()
        writer.join()
    assert 3.0 <= wall < 5.0, err  # the grace, not twice it, and not forever
    assert cpu < 0.5, f"{cpu} s of CPU in {wall} s of waiting"  # a spin costs ~wall
    lines = err.strip().splitlines()
    assert len(lines) == 2, err
    assert "held by an unknown process; it is broken if not released within 3 s" in lines[0]
    assert "broke the journal lock" in lines[1] and "not released for 3 s" in lines[1]
    assert not os.path.lexists(f"{journal}.lock")


@pytest.mark.parametrize("note", [
    '{"host": "HOST", "pid": "abc", "ino": INO}',
    '{"host": "HOST", "pid": 1099511627776, "ino": INO}',
    '{"host": "HOST", "pid": -1, "ino": INO}',
    '{"host": "HOST", "pid": true, "ino": INO}',
    '{"host": 7, "pid": 12345, "ino": INO}',
    '{"host": "HOST", "pid": 12345}',
    '["HOST", 12345, INO]',
    '{"host": "HOST", "pid": 123',
    "[" * 100_000,
    "\xff\xfe not text",
], ids=["pid-text", "pid-huge", "pid-negative", "pid-bool", "host-number", "no-ino", "list",
        "cut", "deep", "binary"])
def test_a_corrupt_owner_note_is_an_unknown_holder(tmp_path: Path, note: str) -> None:
    """A note that does not parse, or names no pid, used to end the run in a traceback
    (``int('abc')``); it says nothing about the holder, so the holder is unknown."""
    from aoe_optuna.atomic_write import host_name

    journal = tmp_path / "j.log"
    journal.touch()
    os.symlink(journal, f"{journal}.lock")
    ino = os.lstat(f"{journal}.lock").st_ino
    Path(f"{journal}.lock.owner").write_bytes(
        note.replace("HOST", host_name()).replace("INO", str(ino)).encode("latin-1"))
    waiter = OwnedSymlinkLock(str(journal))
    assert waiter._owner() is None
    assert waiter._describe_owner() == "held by an unknown process"
    assert not waiter._break_if_dead()
    assert os.path.lexists(f"{journal}.lock")


@pytest.mark.slow  # waits out the grace of a real aoe-tune run
def test_a_run_meeting_a_dangling_lock_with_a_corrupt_note_goes_on_after_the_grace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a folder copied after a kill leaves it: the lock points where the journal was,
    its note does not parse. Before: a traceback, or a core spinning forever. The grace
    is set to 5 s (AOE_JOURNAL_GRACE_S) of the 30 it is by default."""
    monkeypatch.setenv("AOE_JOURNAL_GRACE_S", "5")
    journal = tmp_path / "j.log"
    assert _tune(journal, 2).returncode == 0
    os.symlink("/nowhere/j.log", f"{journal}.lock")
    Path(f"{journal}.lock.owner").write_text('{"host": "h", "pid": "abc", "ino": 1}')
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    run = _tune(journal, 4)
    took = time.monotonic() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)

    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    said = [line for line in run.stderr.splitlines() if "journal lock" in line]
    assert len(said) == 2, run.stderr
    assert "unknown process; it is broken if not released within 5 s" in said[0]
    assert "broke the journal lock" in said[1]
    assert 5 <= took < 19  # the grace announced; before the fix twice it, or never
    assert cpu < 4.5, f"{cpu:.1f} s of CPU in {took:.1f} s"  # a spin costs 5 s more


def test_a_folder_in_the_locks_place_is_one_line_at_once(tmp_path: Path) -> None:
    """No process can take or break a folder: Optuna's own wait spins on it forever."""
    from aoe_optuna.study.storage.journal_lock import JournalLockError

    journal = tmp_path / "j.log"
    journal.touch()
    os.mkdir(f"{journal}.lock")
    started = time.monotonic()
    with pytest.raises(JournalLockError, match=r"j\.log\.lock is a folder, not a journal lock"):
        OwnedSymlinkLock(str(journal)).acquire()
    assert time.monotonic() - started < 1.0
    assert os.path.isdir(f"{journal}.lock")


def test_release_leaves_a_lock_that_is_no_longer_its_own(tmp_path: Path) -> None:
    """A holder paused past the grace finds another's lock in its place on waking."""
    journal = tmp_path / "j.log"
    journal.touch()
    mine = OwnedSymlinkLock(str(journal))
    mine.acquire()
    os.rename(f"{journal}.lock", tmp_path / "broken")  # a waiter broke it after the grace
    other = OwnedSymlinkLock(str(journal))
    other.acquire()
    mine.release()
    assert other._describe_owner() == f"held by pid {os.getpid()} on {other._owner()['host']}"
    other.release()
    assert not os.path.lexists(f"{journal}.lock")
    assert not os.path.lexists(f"{journal}.lock.owner")
