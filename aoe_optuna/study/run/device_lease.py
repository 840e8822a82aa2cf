"""One timing at a time per device, across threads, processes and runs on a host.

A device (a card, or for the cpu backend the core its timings are pinned to)
is leased by an exclusive ``flock`` on ``<lease dir>/<device>.lock``
(:mod:`aoe_optuna.lock_file`). The kernel drops the lock when its holder's file
is closed, so a holder killed with SIGKILL frees the device at once: nothing
has to notice it died. Two threads of one process exclude each other too. The
holder removes the file as it releases the lease, so a run leaves no lease
file behind (a killed holder's is removed by the next holder of that device).

A holder that is only paused (SIGSTOP) keeps the lock; a waiter gives up
after ``timeout_s`` and says who holds the device (the holder writes its pid
into the file), so the trial fails as a timeout, as a hung run does.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from aoe_optuna.lock_file import LockWaitTimeout, removed_on_release

LEASE_DIR_ENV = "AOE_LEASE_DIR"
POLL_S = 0.02  # how often a waiter tries the lock again
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class LeaseTimeout(TimeoutError):
    """The device stayed held by another process for longer than the wait allows."""


def lease_dir() -> Path:
    """Where lease files live: ``$AOE_LEASE_DIR``, else ``<tmp>/aoe-device-leases``."""
    return Path(os.environ.get(LEASE_DIR_ENV) or Path(tempfile.gettempdir()) / "aoe-device-leases")


@dataclass(frozen=True)
class Held:
    """What a holder learns: how long it waited for the device."""

    device: str
    waited_s: float


@dataclass(frozen=True)
class DeviceLease:
    """The lease of one named device (``cpu-core-1``, ``npu-0``)."""

    device: str
    timeout_s: float = 600.0
    directory: Path | None = None

    def __post_init__(self) -> None:
        if not _SAFE_NAME.fullmatch(self.device):
            raise ValueError(f"device: expected letters, digits, '-', '_' or '.', "
                             f"got {self.device!r}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s: expected a positive number, got {self.timeout_s!r}")

    @property
    def path(self) -> Path:
        return (self.directory or lease_dir()) / f"{self.device}.lock"

    @contextlib.contextmanager
    def hold(self) -> Iterator[Held]:
        """Wait for the device (at most ``timeout_s``), hold it for the block."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with removed_on_release(self.path, self.timeout_s, f"{os.getpid()}\n",
                                    POLL_S) as waited:
                yield Held(self.device, waited)
        except LockWaitTimeout as exc:
            raise LeaseTimeout(
                f"device {self.device} held by {holder_of(exc.note)} for more than "
                f"{self.timeout_s:g} s (lease {self.path})") from None


def holder_of(note: str) -> str:
    """``pid N`` as the holder wrote it (``an unknown process`` if it wrote nothing yet)."""
    return f"pid {note}" if note.isdigit() else "an unknown process"
