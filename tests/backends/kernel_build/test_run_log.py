"""A failed run's whole output travels with its Measurement, for the trial's log artifact."""

from __future__ import annotations

import sys

from aoe_optuna.backends.base import FAILURE_LOG
from aoe_optuna.backends.kernel_build import failure_from_run, run_limited, run_log

MANY_LINES = "import sys\nfor i in range(40): print(f'line {i}', file=sys.stderr)\nsys.exit(1)"


def test_the_log_keeps_every_line_the_reason_leaves_out() -> None:
    result = run_limited([sys.executable, "-c", MANY_LINES], timeout_s=30)
    m = failure_from_run(result, "run")
    assert m is not None and "line 5" in m.reason and "line 39" not in m.reason
    log = m.extra[FAILURE_LOG]
    assert log.startswith(f"$ {sys.executable} -c ")
    assert "exit status 1 after" in log
    assert all(f"line {i}\n" in log for i in range(40))


def test_a_killed_run_says_so_in_its_log() -> None:
    crash = "import os, signal; print('about to crash', flush=True); os.kill(os.getpid(), 11)"
    m = failure_from_run(run_limited([sys.executable, "-c", crash], timeout_s=30), "run")
    assert m is not None and "killed by SIGSEGV" in m.extra[FAILURE_LOG]
    assert "--- stdout ---\nabout to crash" in m.extra[FAILURE_LOG]
    hang = run_limited([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5)
    m = failure_from_run(hang, "run")
    assert m is not None and m.failure_kind == "timeout"
    assert "killed after its 0.5 s limit" in m.extra[FAILURE_LOG]


def test_a_huge_log_keeps_its_head_and_tail() -> None:
    # the markers are made at run time, so the command line in the log does not hold them
    code = "import sys; sys.stderr.write('ab'.upper() + 'x' * 5000 + 'yz'.upper()); sys.exit(2)"
    log = run_log(run_limited([sys.executable, "-c", code], timeout_s=30), chars=1000)
    assert len(log) < 1100 and "ABxxx" in log and "xxxYZ" in log
    assert "characters left out" in log
