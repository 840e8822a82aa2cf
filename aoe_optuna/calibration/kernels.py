"""Measured rows grouped into distinct kernels: what a calibration fits and holds out.

A duplicate is the same kernel measured more than once: the same family (the
row's op), GEMM shape and dtype, and tiling (every parameter, the simulator's
defaults standing for those a row leaves out; no tiling is the library's
kernel). Its copies are one kernel whose figure is the median of its timings.
Counted as separate figures, five copies of one row predicted each other
exactly (leave-one-out 0.0%) and a file given twice halved the reported error;
one kernel is one figure however often it was timed, and the leave-one-out
leaves out a whole kernel.

The rows are added as they are read, so a large input costs the memory of its
distinct kernels, and the caps of :mod:`.input_caps` are checked as soon as
they are passed, naming the row: rows from all inputs together, and distinct
GEMM shapes.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aoe_optuna.calibration.input_caps import MAX_ROWS, MAX_SHAPES, ROWS_WHY, SHAPES_WHY
from aoe_optuna.calibration.timings import TimedKernel
from aoe_optuna.space.params import default_config
from aoe_optuna.workload.files import WorkloadFileError
from aoe_optuna.workload.gemm import Gemm, GemmKey

Tiling = frozenset[tuple[str, Any]]
KernelKey = tuple[str, GemmKey, Tiling | None]  # (family, shape and dtype, tiling)


@dataclass
class MeasuredKernel:
    """One distinct kernel: its first row (where it was read, its GEMM and tiling) and
    every timing of it that was read."""

    first: TimedKernel
    times_us: list[float] = field(default_factory=list)

    @property
    def gemm(self) -> Gemm:
        return self.first.gemm

    @property
    def tiling(self) -> dict[str, Any] | None:
        return self.first.tiling

    @property
    def figure_us(self) -> float:
        """The kernel's time: the median of its timings (one odd timing of a kernel
        timed often does not move it)."""
        return float(statistics.median(self.times_us))


class KernelTable:
    """Rows added one at a time, kept as distinct kernels in the order first seen."""

    def __init__(self, max_rows: int = MAX_ROWS, max_shapes: int = MAX_SHAPES) -> None:
        self.max_rows, self.max_shapes = max_rows, max_shapes
        self.rows = 0
        self._kernels: dict[KernelKey, MeasuredKernel] = {}
        self._shapes: set[GemmKey] = set()
        self._defaults = default_config()

    def __len__(self) -> int:
        return len(self._kernels)

    @property
    def kernels(self) -> list[MeasuredKernel]:
        return list(self._kernels.values())

    def add_all(self, rows: Iterable[TimedKernel]) -> None:
        for row in rows:
            self.add(row)

    def add(self, row: TimedKernel) -> None:
        if self.rows == self.max_rows:
            raise _cap(row, f"at most {self.max_rows:,} rows from all inputs together "
                       f"({ROWS_WHY})", f"row {self.rows + 1:,}")
        self.rows += 1
        key = self.key(row)
        kernel = self._kernels.get(key)
        if kernel is None:
            if row.gemm.key not in self._shapes:
                if len(self._shapes) == self.max_shapes:
                    raise _cap(row, f"at most {self.max_shapes:,} distinct GEMM shapes "
                               f"({SHAPES_WHY})", f"shape {len(self._shapes) + 1:,}")
                self._shapes.add(row.gemm.key)
            kernel = self._kernels[key] = MeasuredKernel(row)
        kernel.times_us.append(row.time_us)

    def key(self, row: TimedKernel) -> KernelKey:
        """What makes two rows the same kernel (the module's docstring says why): a
        parameter at its default is left out, as the simulator fills it in."""
        defaults = self._defaults
        tiling = (None if row.tiling is None else
                  frozenset((k, v) for k, v in row.tiling.items() if defaults[k] != v))
        return row.family, row.gemm.key, tiling


def _cap(row: TimedKernel, expected: str, got: str) -> WorkloadFileError:
    return WorkloadFileError(row.source, row.place, expected, got)
