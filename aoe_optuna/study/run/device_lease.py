"""One timing at a time per device, across threads, processes and runs on a host.

A device (a card, or for the cpu backend the core its timings are pinned to)
is leased by an exclusive ``flock`` on ``<lease dir>/<device>.lock``. The
kernel drops the lock when its holder's file is closed, so a holder killed
with SIGKILL frees the device at once: nothing has to notice it died. Each
acquisition opens the file anew, so two threads of one process exclude each
other too (flock locks belong to the open file, not to the process).

A holder that is only paused (SIGSTOP) keeps the lock; a waiter gives up
after ``timeout_s`` and says who holds the device (the holder writes its pid
into the file), so the trial fails as a timeout, as a hung run does.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            started = time.monotonic()
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() - started >= self.timeout_s:
                        raise LeaseTimeout(
                            f"device {self.device} held by {holder_of(self.path)} for more "
                            f"than {self.timeout_s:g} s (lease {self.path})") from None
                    time.sleep(POLL_S)
            waited = time.monotonic() - started
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield Held(self.device, waited)
        finally:
            os.close(fd)  # closing drops the lock


def holder_of(path: Path) -> str:
    """``pid N`` as the holder wrote it (``an unknown process`` if it wrote nothing yet)."""
    try:
        text = path.read_text().strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "an unknown process"
