"""Whether a process of this host still runs: the one answer every sweep of what a dead
process left behind asks for (temporary files, work folders, lock notes, RUNNING trials).

A pid alone is reused by a later process; where a start time was recorded beside it,
:func:`same_process` tells the two apart. Start times and stopped states come from
Linux's /proc; elsewhere they are unknown and the pid alone decides.
"""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs here (one we may not signal still runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def same_process(pid: int, started: object) -> bool:
    """Whether ``pid`` runs and is the process that started at ``started`` (its
    :func:`start_ticks`): the same pid with another start time is another process.
    A ``started`` that is not an int (not recorded, or unknown then) is not compared."""
    if not pid_alive(pid):
        return False
    if isinstance(started, int):
        return start_ticks(pid) == started
    return True


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux /proc), else None."""
    fields = _stat_fields(pid)
    return int(fields[19]) if len(fields) > 19 else None


def stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP, Ctrl-Z, a debugger): alive, but doing nothing."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] in ("T", "t")


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (Linux), else []."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return []
    return stat[stat.rfind(")") + 2 :].split()
