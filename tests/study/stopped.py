"""Waiting for a worker that stops itself at a fault point (AOE_FAULT_SIGNAL=SIGSTOP)."""

from __future__ import annotations

import subprocess
import time


def wait_stopped(proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Until ``proc`` is in the stopped state (Linux: its /proc stat says T or t)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the worker exited before its pause"
        with open(f"/proc/{proc.pid}/stat") as fh:
            stat = fh.read()
        if stat[stat.rfind(")") + 2] in "Tt":
            return
        time.sleep(0.05)
    raise AssertionError("the worker never reached its pause")
