"""A lock file its holder removes: real processes and threads contend for it, each
increment under the lock counts once, and no lock file outlives its holders."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from aoe_optuna.lock_file import LockWaitTimeout, removed_on_release

# argv: lock, counter, rounds; reads, then writes the counter under the lock, slowly enough
# that an unlocked neighbour would interleave and lose increments
INCREMENT = """
import sys, time
from pathlib import Path
from aoe_optuna.lock_file import removed_on_release
lock, counter, rounds = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
for _ in range(rounds):
    with removed_on_release(lock, 30.0, "x"):
        n = int(counter.read_text())
        time.sleep(0.001)
        counter.write_text(str(n + 1))
"""

HOLD = """
import sys, time
from aoe_optuna.lock_file import removed_on_release
with removed_on_release(sys.argv[1], 30.0, "held by the test"):
    print("held", flush=True)
    time.sleep(600)
"""


def test_processes_never_hold_it_together_and_leave_no_file(tmp_path: Path) -> None:
    lock, counter = tmp_path / "x.lock", tmp_path / "counter"
    counter.write_text("0")
    procs = [subprocess.Popen([sys.executable, "-c", INCREMENT, str(lock), str(counter), "40"])
             for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    assert counter.read_text() == "120"  # no increment lost: one holder at a time
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counter"]


def test_threads_of_one_process_exclude_each_other(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    inside, most = [0], [0]
    guard = threading.Lock()

    def use() -> None:
        for _ in range(30):
            with removed_on_release(lock, 30.0, "t"):
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and not lock.exists()


def test_a_waiter_times_out_with_the_holders_note_and_a_killed_holders_file_goes(
        tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockWaitTimeout) as waited, removed_on_release(lock, 0.2, "w"):
            pass
        assert waited.value.note == "held by the test"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert lock.exists()  # killed while holding: its file stays, unlocked
    with removed_on_release(lock, 1.0, "next") as waited_s:
        assert waited_s < 1.0 and lock.read_text() == "next"
    assert not lock.exists()  # the next holder removed it


def test_a_missing_folder_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), removed_on_release(tmp_path / "no" / "x.lock", 1, ""):
        pass
    assert os.listdir(tmp_path) == []
