"""The device lease: one holder at a time, freed by a killed holder, named when paused,
and no lease file left once its holders are done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aoe_optuna.study.run.device_lease import LEASE_DIR_ENV, DeviceLease, LeaseTimeout

HOLDER = Path(__file__).with_name("lease_holder.py")


@pytest.fixture
def lease_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path))
    return tmp_path


def start_holder(device: str) -> subprocess.Popen[str]:
    """A process that holds ``device`` (it has said so when this returns)."""
    proc = subprocess.Popen([sys.executable, str(HOLDER), device], stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ))
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture
def holder(lease_dir: Path) -> Iterator[subprocess.Popen[str]]:
    proc = start_holder("core-7")
    yield proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
    proc.wait()


def test_two_threads_never_hold_one_device_at_once(lease_dir: Path) -> None:
    lease = DeviceLease("core-1")
    inside, most = [0], [0]
    guard = threading.Lock()

    def use() -> None:
        for _ in range(20):
            with lease.hold():
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.001)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=use) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
    assert list(lease_dir.iterdir()) == []  # each holder removed the file it held


def test_other_devices_are_not_held(lease_dir: Path) -> None:
    with DeviceLease("core-1").hold(), DeviceLease("core-2", timeout_s=0.1).hold() as held:
        assert held.waited_s < 0.1


@pytest.mark.slow
def test_a_killed_holder_frees_the_device_at_once(holder: subprocess.Popen[str],
                                                  lease_dir: Path) -> None:
    with pytest.raises(LeaseTimeout), DeviceLease("core-7", timeout_s=0.2).hold():
        pass
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (lease_dir / "core-7.lock").exists()  # killed while holding: its file stays
    with DeviceLease("core-7", timeout_s=5).hold() as held:
        assert held.waited_s < 1.0
    assert list(lease_dir.iterdir()) == []  # the next holder removed it


@pytest.mark.slow
def test_a_paused_holder_is_named_then_the_device_comes_back(
        holder: subprocess.Popen[str]) -> None:
    holder.send_signal(signal.SIGSTOP)
    held_by = f"device core-7 held by pid {holder.pid} "
    with pytest.raises(LeaseTimeout, match=held_by), DeviceLease("core-7", 0.3).hold():
        pass
    holder.send_signal(signal.SIGCONT)
    holder.kill()
    holder.wait()
    with DeviceLease("core-7", timeout_s=5).hold():
        pass


@pytest.mark.parametrize("device, timeout, message", [
    ("../etc", 1.0, "device: expected letters"),
    ("core-1", 0.0, "timeout_s: expected a positive number"),
])
def test_bad_lease_is_refused(device: str, timeout: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DeviceLease(device, timeout)
