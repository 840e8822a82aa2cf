"""Configs a few parameter changes away from a given one (index rows, feasible only).

Both samplers refine around their best measurements: GPUCBSampler scores the
one-parameter neighbours of its incumbents on spaces too big to enumerate,
ReinforceSampler lets its policy choose among the untried neighbours of its
elites. A change is any other choice of a parameter, not just the adjacent
one: on tiling spaces the step that matters is often a halving or a doubling.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from aoe_optuna.space import SearchSpace


def neighbours(space: SearchSpace, rows: np.ndarray) -> np.ndarray:
    """Every feasible config one parameter away from some row of ``rows``."""
    out = [_changed(space, row, (j,)) for row in rows for j in range(len(space.shape))]
    if not out:
        return np.zeros((0, len(space.names)), dtype=np.int64)
    cand = np.concatenate(out)
    return cand[space.is_feasible(cand)]


def ball(space: SearchSpace, centre: np.ndarray, radius: int) -> np.ndarray:
    """Every feasible config differing from ``centre`` in exactly ``radius`` parameters.

    Pairs are generated whole, not as neighbours of neighbours, so a move that
    is only feasible when two tiles change together (one grows as the other
    shrinks under a buffer's capacity) is found.
    """
    d = len(space.shape)
    out = [_changed(space, centre, pos) for pos in combinations(range(d), radius)]
    out = [block for block in out if block.shape[0]]
    if not out:
        return np.zeros((0, d), dtype=np.int64)
    cand = np.concatenate(out)
    return cand[space.is_feasible(cand)]


def _changed(space: SearchSpace, row: np.ndarray, positions: tuple[int, ...]) -> np.ndarray:
    """``row`` with the parameters at ``positions`` set to every other combination of choices."""
    others = [np.delete(np.arange(space.shape[j]), row[j]) for j in positions]
    grids = np.meshgrid(*others, indexing="ij")
    n = grids[0].size
    block = np.repeat(np.asarray(row, dtype=np.int64)[None, :], n, axis=0)
    for j, g in zip(positions, grids, strict=True):
        block[:, j] = g.ravel()
    return block
