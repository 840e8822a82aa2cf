"""Named fault points: a process that kills itself at an exact step of a trial's life.

Crash-consistency tests need a kill that lands at a chosen write, not
wherever a timer happens to fire. ``AOE_FAULT_AT=<point>[:<n>]`` makes the
n-th arrival (default 1st) of this process at ``<point>`` send itself
``AOE_FAULT_SIGNAL`` (default SIGKILL). Unset, a fault point costs one
dictionary lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

FAULT_ENV = "AOE_FAULT_AT"
SIGNAL_ENV = "AOE_FAULT_SIGNAL"

_arrivals: Counter[str] = Counter()


def fault_point(name: str) -> None:
    """Signal this process here when ``AOE_FAULT_AT`` names this point and arrival."""
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    if point != name:
        return
    _arrivals[name] += 1
    if _arrivals[name] == int(nth or 1):
        sig = signal.Signals[os.environ.get(SIGNAL_ENV, "SIGKILL")]
        os.kill(os.getpid(), sig)
