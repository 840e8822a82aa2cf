"""Which blocks each core runs, in the block swizzle's order, and the slowest core's time.

catlass's ``GemmIdentityBlockSwizzle<Offset, Direction>`` maps task ``t``
(core ``c`` runs tasks ``c, c + P, c + 2P, ...``) to a block: direction 0
walks groups of ``Offset`` block rows, column after column, reversing the
column order in every other group; direction 1 is the transpose (groups of
``Offset`` block columns walked row after row). K splits come last: task
``t`` works on split ``t // (Bm Bn)``.

Edge blocks (the last block row when ``M`` is not a multiple of ``tile_m``,
the last block column likewise) are cheaper, so which core gets them decides
the slowest core: the swizzle is a load-balancing knob, not only a cache one.
Up to ``EXACT_TASKS_PER_CORE`` tasks per core are assigned exactly; past
that, the imbalance is a small part of the time and the work is spread
evenly (each core's share of every block kind).
"""

from __future__ import annotations

import numpy as np

EXACT_TASKS_PER_CORE = 16


def block_coords(
    task: np.ndarray, blocks_m: np.ndarray, blocks_n: np.ndarray, offset: np.ndarray,
    direction: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(block row, block column) of each task index (arrays broadcast together).

    Direction 1 is direction 0 on the transposed grid, so one walk serves both.
    """
    along_n = np.asarray(direction) == 0
    rows_, cols_ = np.where(along_n, blocks_m, blocks_n), np.where(along_n, blocks_n, blocks_m)
    inner = np.mod(task, rows_ * cols_)
    off = np.maximum(offset, 1.0)
    group = np.floor(inner / (off * cols_))
    within = inner - group * off * cols_
    height = np.minimum(off, rows_ - off * group)
    r = group * off + np.mod(within, height)
    c = np.floor(within / height)
    c = np.where(np.mod(group, 2) == 1, cols_ - c - 1, c)
    return np.where(along_n, r, c), np.where(along_n, c, r)


def slowest_core_s(
    times: dict[tuple[bool, bool], np.ndarray], blocks_m: np.ndarray, blocks_n: np.ndarray,
    splits: np.ndarray, edge_m: np.ndarray, edge_n: np.ndarray, offset: np.ndarray,
    direction: np.ndarray, cores: int,
) -> np.ndarray:
    """Time of the busiest core: the sum of its blocks' times.

    ``times[(last_row, last_col)]`` is a block's time by kind (per config);
    ``edge_m``/``edge_n`` say whether the last block row/column is short.
    """
    blocks = blocks_m * blocks_n * splits
    per_core = np.ceil(blocks / cores)
    kinds = {key: np.broadcast_to(np.asarray(v, dtype=float), blocks.shape)
             for key, v in times.items()}
    # Without edge blocks every block costs the same: the busiest core runs ceil(B/P).
    uniform = ~np.asarray(edge_m) & ~np.asarray(edge_n)
    result = per_core * kinds[(False, False)]
    mixed = ~uniform & (per_core <= EXACT_TASKS_PER_CORE)
    if np.any(mixed):
        idx = np.nonzero(mixed)[0]
        keys = np.stack([np.broadcast_to(np.asarray(x, dtype=float), blocks.shape)[idx]
                         for x in (blocks_m, blocks_n, splits, offset, direction, edge_m,
                                   edge_n)], axis=1)
        unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        patterns = _core_patterns(unique, cores)  # (unique grids, patterns, 4 kinds)
        kind_s = np.stack([kinds[key][idx] for key in KINDS], axis=1)
        busiest = np.zeros(len(idx))
        for q in range(patterns.shape[1]):
            busiest = np.maximum(busiest, np.sum(patterns[inverse.ravel(), q] * kind_s, axis=1))
        result[idx] = busiest
    spread = ~uniform & ~mixed
    if np.any(spread):
        result = np.where(spread, _spread_busiest(kinds, blocks_m, blocks_n, splits, edge_m,
                                                  edge_n, cores), result)
    return result


KINDS = ((False, False), (False, True), (True, False), (True, True))  # (last row, last col)


def _core_patterns(grids: np.ndarray, cores: int) -> np.ndarray:
    """For each grid (blocks_m, blocks_n, splits, offset, direction, edge_m, edge_n): the
    distinct per-core counts of each block kind, padded with zero rows.

    The assignment depends on the grid only, not on the block times, so it is
    walked once per distinct grid; a core's time is then its counts times the
    kinds' times, and the busiest core is the largest of those sums.
    """
    bm, bn, splits, off, dirn, em, en = (grids[:, i][:, None] for i in range(7))
    em, en = em != 0, en != 0
    blocks = bm * bn * splits
    rounds = int(np.max(np.ceil(blocks / cores)))
    core = np.arange(cores, dtype=float)[None, :]
    counts = np.zeros((len(grids), cores, len(KINDS)))
    for j in range(rounds):
        task = j * cores + core
        m_idx, n_idx = block_coords(task, bm, bn, off, dirn)
        kind = 2 * (em & (m_idx == bm - 1)) + (en & (n_idx == bn - 1))
        valid = task < blocks
        for i in range(len(KINDS)):
            counts[:, :, i] += valid & (kind == i)
    distinct = [np.unique(c, axis=0) for c in counts]
    width = max(len(d) for d in distinct)
    out = np.zeros((len(grids), width, len(KINDS)))
    for u, d in enumerate(distinct):
        out[u, : len(d)] = d
    return out


def _spread_busiest(
    times: dict[tuple[bool, bool], np.ndarray], blocks_m: np.ndarray, blocks_n: np.ndarray,
    splits: np.ndarray, edge_m: np.ndarray, edge_n: np.ndarray, cores: int,
) -> np.ndarray:
    """Many tasks per core: each core runs its share of every kind of block."""
    # evenly spread: every core runs its share of each kind of block
    full_m = np.where(edge_m, blocks_m - 1, blocks_m)
    full_n = np.where(edge_n, blocks_n - 1, blocks_n)
    short_m, short_n = blocks_m - full_m, blocks_n - full_n
    total = splits * (full_m * full_n * times[(False, False)]
                      + full_m * short_n * times[(False, True)]
                      + short_m * full_n * times[(True, False)]
                      + short_m * short_n * times[(True, True)])
    return np.maximum(total / cores, times[(False, False)])
