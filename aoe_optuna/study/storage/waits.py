"""How long a storage waits, each wait settable from the environment.

Read when a storage is opened, not when the package is imported, so a bad value is a
one-line refusal of the run that names the variable (not a traceback at import, nor a
silent default):

* ``AOE_SQLITE_LOCK_TIMEOUT_S`` (seconds, default 60): how long an SQLite write waits
  for another process's lock before it fails.
* ``AOE_HEARTBEAT_S`` (whole seconds, default 5): Optuna's heartbeat on RDB storages; a
  trial silent for four beats is stale and its config retried.
* ``AOE_JOURNAL_GRACE_S`` (whole seconds, default 30, Optuna's): a Journal file's lock
  that no live process of this host holds is broken once it has stood this long; longer
  where a host's writes to a shared file system can stall.
* ``AOE_GRPC_READY_S`` (whole seconds, default 10): how long a worker waits for a gRPC
  proxy to answer (one started together with its workers needs a few seconds).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

HEARTBEATS_TO_STALE = 4  # Optuna's grace period, in heartbeats


class WaitSettingError(ValueError):
    """An environment variable that sets a wait holds no usable value; one line."""


@dataclass(frozen=True)
class StorageWaits:
    sqlite_lock_timeout_s: float = 60.0
    heartbeat_s: int = 5
    journal_grace_s: int = 30
    grpc_ready_s: int = 10

    @property
    def grace_period_s(self) -> int:
        """How long a trial's heartbeat may be silent before the trial is stale."""
        return HEARTBEATS_TO_STALE * self.heartbeat_s


def storage_waits(environ: Mapping[str, str] | None = None) -> StorageWaits:
    """The waits the environment sets (the defaults for what it leaves unset or empty)."""
    env = os.environ if environ is None else environ
    default = StorageWaits()
    return StorageWaits(
        sqlite_lock_timeout_s=_seconds(env, "AOE_SQLITE_LOCK_TIMEOUT_S",
                                       default.sqlite_lock_timeout_s),
        heartbeat_s=_whole_seconds(env, "AOE_HEARTBEAT_S", default.heartbeat_s),
        journal_grace_s=_whole_seconds(env, "AOE_JOURNAL_GRACE_S", default.journal_grace_s),
        grpc_ready_s=_whole_seconds(env, "AOE_GRPC_READY_S", default.grpc_ready_s),
    )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise WaitSettingError(f"{name}={text!r}: expected a number of seconds above 0 "
                               f"(default {default:g})")
    return value


def _whole_seconds(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise WaitSettingError(f"{name}={text!r}: expected a whole number of seconds above 0 "
                               f"(default {default})")
    return int(text)
