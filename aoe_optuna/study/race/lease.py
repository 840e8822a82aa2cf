"""One process races a study: the first to take the race's write-once lease.

Several ``aoe-tune`` processes may end one study's search together (two hosts on
one PostgreSQL study, a resumed run beside a live one). The lease is a write-once
study attribute per race and attempt (``race_lease:<after>:<attempt>``); the
storages keep its first writer (:mod:`aoe_optuna.study.storage.write_once`). A lease
whose holder died is passed on to the next attempt: on this host the holder's pid
and start time say so; a holder on another host is taken as dead once the race's
stored heartbeat (written with every re-timing) is older than ``stale_after_s``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import optuna

from aoe_optuna.attrs import RACE_LEASE_PREFIX
from aoe_optuna.process_liveness import same_process
from aoe_optuna.study.storage.write_once import set_once
from aoe_optuna.study.trials.owned_birth import worker_identity

MAX_ATTEMPTS = 1000


def holder_alive(holder: Any, heartbeat: str, stale_after_s: float,
                 me: dict[str, Any]) -> bool:
    """Whether the lease's ``holder`` may still be racing."""
    if not isinstance(holder, dict):
        return False
    if holder.get("host") == me["host"]:
        pid = holder.get("pid")
        return isinstance(pid, int) and same_process(pid, holder.get("started"))
    try:
        beat = datetime.fromisoformat(heartbeat)
    except ValueError:
        return True  # another host that has not written a re-timing yet
    return (datetime.now(UTC) - beat).total_seconds() < stale_after_s


def take_lease(study: optuna.Study, after: int, heartbeat: str = "",
               stale_after_s: float = 3600.0) -> tuple[bool, dict[str, Any] | None]:
    """(True, None) when this process holds the race of the search of ``after``
    measurements; (False, holder) when a live process holds it."""
    me = worker_identity()
    for attempt in range(MAX_ATTEMPTS):
        held = set_once(study, f"{RACE_LEASE_PREFIX}{after}:{attempt}", me)
        if held == me:
            return True, None
        if holder_alive(held, heartbeat, stale_after_s, me):
            return False, held
    return False, None
