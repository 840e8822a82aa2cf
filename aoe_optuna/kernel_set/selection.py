"""A kernel set from the model: K of the measured configs and the range of M each serves.

The candidates are the configs measured (they built and ran); the model predicts each
one's latency at every M of the mix, and :func:`~aoe_optuna.kernel_set.segments.segment_all`
finds, for every K up to the largest asked, the exact best cover of the sorted M by K
contiguous ranges, each served by one candidate. A mix of more distinct M than
:data:`MAX_CELLS` (a prefill's every length from 128 to 8,192) is cut into that many
consecutive cells, equal in log M, and ranges start only at a cell's edge; a cell's
cost is still every one of its M's weight x latency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aoe_optuna.kernel_set.segments import Segmentation, segment_all

MAX_CELLS = 512
K_MAX = 8  # the largest set the figure and the measurements look at


@dataclass(frozen=True)
class Cells:
    """Consecutive groups of a mix's sorted M: cell i is ``m[starts[i]:starts[i+1]]``."""

    m: np.ndarray
    starts: np.ndarray

    @classmethod
    def of(cls, m: np.ndarray, max_cells: int = MAX_CELLS) -> Cells:
        if len(m) <= max_cells:
            return cls(m, np.arange(len(m)))
        logs = np.log2(m.astype(float))
        edges = np.linspace(logs[0], logs[-1], max_cells + 1)[1:-1]
        starts = np.unique(np.concatenate([[0], np.searchsorted(logs, edges, side="left")]))
        return cls(m, starts)

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per cell, the sum of ``values`` (..., len(m)) over its M."""
        return np.add.reduceat(values, self.starts, axis=-1)

    def bounds(self, first: int, last: int) -> tuple[int, int]:
        """The M range of cells ``first`` to ``last``."""
        end = self.starts[last + 1] - 1 if last + 1 < len(self.starts) else len(self.m) - 1
        return int(self.m[self.starts[first]]), int(self.m[end])


@dataclass(frozen=True)
class RangeChoice:
    """One kernel of a set: the candidate and the M it serves, ``low`` to ``high``."""

    row: int  # index into the candidates
    low: int
    high: int


@dataclass(frozen=True)
class KernelSetChoice:
    """The set for one K: its ranges in M order and its predicted weighted latency."""

    k: int
    ranges: tuple[RangeChoice, ...]
    weighted_s: float

    @property
    def rows(self) -> list[int]:
        """The distinct candidates the set compiles, in order of first range."""
        return list(dict.fromkeys(r.row for r in self.ranges))


def choose_sets(latency_s: np.ndarray, m: np.ndarray, weight: np.ndarray, k_max: int,
                max_cells: int = MAX_CELLS) -> list[KernelSetChoice]:
    """For K = 1..``k_max``: the best K ranges over ``m`` given the candidates' latency
    (candidates, len(m)) and the mix's ``weight`` of each M."""
    cells = Cells.of(m, max_cells)
    cost = cells.sums(latency_s * weight[None, :])
    out = []
    for k, seg in enumerate(segment_all(cost, k_max), start=1):
        out.append(KernelSetChoice(k, _ranges(seg, cells), seg.total))
    return out


def _ranges(seg: Segmentation, cells: Cells) -> tuple[RangeChoice, ...]:
    return tuple(RangeChoice(row, *cells.bounds(a, b)) for a, b, row in seg.ranges())


def per_shape_best_s(latency_s: np.ndarray, weight: np.ndarray) -> float:
    """The limit of K: every M served by its own fastest candidate."""
    return float((np.nanmin(latency_s, axis=0) * weight).sum())


def dispatch(ranges: tuple[RangeChoice, ...], m: np.ndarray) -> np.ndarray:
    """The candidate row each M of ``m`` is dispatched to (-1: outside every range)."""
    out = np.full(len(m), -1, dtype=np.int64)
    for r in ranges:
        out[(m >= r.low) & (m <= r.high)] = r.row
    return out
