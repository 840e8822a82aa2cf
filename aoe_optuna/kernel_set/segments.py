"""K contiguous ranges of a sorted shape axis, each served by one config: exact, by dynamic
programming.

A kernel set dispatches by ranges of M (or of a prefill's length): shapes are sorted,
and a range is a run of consecutive cells. Given the cost of serving each cell with each
candidate config (its weight times its latency), the best partition into at most K
ranges, each served by the candidate cheapest over that range, is a 1-D segmentation:
with ``best[j][b]`` the cheapest cover of cells ``0..b-1`` by ``j`` ranges,

    best[j][b] = min over a < b of best[j-1][a] + seg(a, b),
    seg(a, b)  = min over configs c of sum of cost[c, a..b-1]

which is exact (Bellman; Jackson et al., "An algorithm for optimal partitioning of data
on an interval", 2005, for the same recursion over an interval). ``seg`` comes from
prefix sums over cells: O(B^2 C) for B cells and C candidates, O(K B^2) for the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Segmentation:
    """Ranges of cells and the candidate serving each: range i is cells
    ``starts[i]`` to ``starts[i + 1] - 1`` (the last one to the end)."""

    starts: tuple[int, ...]
    configs: tuple[int, ...]  # row of the cost matrix serving each range
    total: float  # the summed cost of the cover
    cells: int

    def ranges(self) -> list[tuple[int, int, int]]:
        """``(first cell, last cell, config row)`` of each range, in order."""
        ends = [*self.starts[1:], self.cells]
        return [(a, b - 1, c) for a, b, c in zip(self.starts, ends, self.configs, strict=True)]

    def assignment(self) -> np.ndarray:
        """The config row serving each cell."""
        out = np.empty(self.cells, dtype=np.int64)
        for a, b, c in self.ranges():
            out[a:b + 1] = c
        return out

    @property
    def distinct(self) -> int:
        """Distinct configs (kernels) the cover uses."""
        return len(set(self.configs))


def segment(cost: np.ndarray, k: int) -> Segmentation:
    """The cheapest cover of the cells (columns of ``cost``, in order) by at most ``k``
    ranges, each served by one row of ``cost`` (a candidate config; ``inf`` where it
    cannot run the cell). Adjacent ranges with the same config are merged."""
    return segment_all(cost, k)[-1]


def segment_all(cost: np.ndarray, k_max: int) -> list[Segmentation]:
    """:func:`segment` for every k from 1 to ``k_max`` at once (one table)."""
    cost = np.asarray(cost, dtype=float)
    if cost.ndim != 2 or cost.shape[0] == 0 or cost.shape[1] == 0:
        raise ValueError(f"cost: expected a (configs, cells) matrix, got shape {cost.shape}")
    if k_max < 1:
        raise ValueError(f"k: expected at least 1 range, got {k_max}")
    n_cfg, cells = cost.shape
    prefix = np.zeros((n_cfg, cells + 1))
    with np.errstate(invalid="ignore"):
        np.cumsum(np.where(np.isfinite(cost), cost, 0.0), axis=1, out=prefix[:, 1:])
    blocked = np.zeros((n_cfg, cells + 1), dtype=np.int64)  # cells a config cannot run
    np.cumsum(~np.isfinite(cost), axis=1, out=blocked[:, 1:])
    seg = np.full((cells + 1, cells + 1), np.inf)  # seg[a, b]: cells a..b-1
    arg = np.zeros((cells + 1, cells + 1), dtype=np.int64)
    for a in range(cells):
        span = prefix[:, a + 1:] - prefix[:, a:a + 1]
        span = np.where(blocked[:, a + 1:] - blocked[:, a:a + 1] > 0, np.inf, span)
        arg[a, a + 1:] = np.argmin(span, axis=0)
        seg[a, a + 1:] = span[arg[a, a + 1:], np.arange(cells - a)]
    best = np.full((k_max + 1, cells + 1), np.inf)
    best[0, 0] = 0.0
    back = np.zeros((k_max + 1, cells + 1), dtype=np.int64)
    for j in range(1, k_max + 1):
        # best[j-1][a] + seg[a][b] over a, for every b at once
        total = best[j - 1][:, None] + seg
        back[j] = np.argmin(total, axis=0)
        best[j] = total[back[j], np.arange(cells + 1)]
        # at most j ranges: never worse than j - 1
        fewer = best[j - 1] <= best[j]
        best[j] = np.where(fewer, best[j - 1], best[j])
        back[j] = np.where(fewer, -1, back[j])
    if not np.isfinite(best[k_max, cells]):
        raise ValueError("cost: some cell has no candidate that can run it")
    return [_trace(best, back, arg, j, cells) for j in range(1, k_max + 1)]


def _trace(best: np.ndarray, back: np.ndarray, arg: np.ndarray, k: int,
           cells: int) -> Segmentation:
    starts: list[int] = []
    configs: list[int] = []
    b, j = cells, k
    while b > 0:
        a = int(back[j, b])
        if a < 0:  # this cover uses fewer ranges
            j -= 1
            continue
        starts.append(a)
        configs.append(int(arg[a, b]))
        b, j = a, j - 1
    starts.reverse()
    configs.reverse()
    merged_starts, merged_configs = [starts[0]], [configs[0]]
    for s, c in zip(starts[1:], configs[1:], strict=True):
        if c != merged_configs[-1]:
            merged_starts.append(s)
            merged_configs.append(c)
    return Segmentation(tuple(merged_starts), tuple(merged_configs), float(best[k, cells]),
                        cells)


def cover_cost(cost: np.ndarray, assignment: np.ndarray) -> float:
    """The summed cost of serving each cell with the row ``assignment`` gives it."""
    cost = np.asarray(cost, dtype=float)
    return float(cost[assignment, np.arange(cost.shape[1])].sum())
