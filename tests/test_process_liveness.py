"""One liveness check for every sweep: a dead pid, a reused pid, a stopped process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from aoe_optuna.process_liveness import pid_alive, same_process, start_ticks, stopped


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_this_process_is_alive_and_a_reaped_child_is_not() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(_dead_pid())


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="start times need /proc")
def test_a_pid_with_another_start_time_is_another_process() -> None:
    me = os.getpid()
    started = start_ticks(me)
    assert isinstance(started, int)
    assert same_process(me, started)
    assert not same_process(me, started + 1)  # the pid was reused by a later process
    assert same_process(me, None)  # no start time recorded: the pid alone decides
    assert not same_process(_dead_pid(), None)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="states need /proc")
def test_a_stopped_process_is_alive_and_stopped() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not stopped(proc.pid)
        os.kill(proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while not stopped(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stopped(proc.pid) and pid_alive(proc.pid)
    finally:
        proc.kill()
        proc.wait()
