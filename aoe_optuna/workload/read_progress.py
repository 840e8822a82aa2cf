"""Progress lines for long reads and long steps: one stderr line every few seconds.

A profile or a timings file of hundreds of thousands of rows takes seconds to
read, and a calibration then simulates its kernels; silence for that long looks
like a hang. Each line says how far the work got; the lines are throttled so a
fast run prints none and a slow one one every :data:`PROGRESS_EVERY_S` seconds.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from aoe_optuna.workload.csv_rows import CsvRows

PROGRESS_EVERY_S = 5.0
CHECK_EVERY = 1024  # lines between two looks at the clock


class ProgressLine:
    """A stderr line at most every :data:`PROGRESS_EVERY_S` seconds; the text is built
    only when a line is due, so asking costs a clock read."""

    def __init__(self) -> None:
        self.next_at = time.monotonic() + PROGRESS_EVERY_S

    def say(self, text: Callable[[], str]) -> None:
        if time.monotonic() < self.next_at:
            return
        print(text(), file=sys.stderr, flush=True)
        self.next_at = time.monotonic() + PROGRESS_EVERY_S


class ReadProgress:
    """How far a CSV file's read got: rows, the share of the file, and ``count()`` of
    what the rows made so far (``what``: "GEMM shapes", "distinct kernels")."""

    def __init__(self, rows: CsvRows, what: str, count: Callable[[], int]) -> None:
        self.rows, self.what, self.count = rows, what, count
        self.line = ProgressLine()

    def tick(self, line: int) -> None:
        if line % CHECK_EVERY:
            return
        self.line.say(lambda: f"{self.rows.source}: read {line - 1:,} rows "
                      f"({self.rows.read_bytes / self.rows.size:.0%} of the file), "
                      f"{self.count():,} {self.what} so far")
