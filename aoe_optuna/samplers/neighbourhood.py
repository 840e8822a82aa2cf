"""Configs a few parameter changes away from a given one (index rows, feasible only).

Both samplers refine around their best measurements: GPUCBSampler scores the
one-parameter neighbours of its incumbents on spaces too big to enumerate;
ReinforceSampler's local moves (``reinforce/_local.py``) draw from the
untried configs one or two parameters from a top config. A change is any
other choice of a parameter, not just the adjacent one; ``steps_away`` says
how far a change goes along an ordered axis.
"""

from __future__ import annotations

from collections import OrderedDict
from itertools import combinations

import numpy as np

from aoe_optuna.space.search_space import SearchSpace


def neighbours(space: SearchSpace, rows: np.ndarray) -> np.ndarray:
    """Every feasible config one parameter away from some row of ``rows``."""
    out = [ball(space, row, 1) for row in rows]
    if not out:
        return np.zeros((0, len(space.shape)), dtype=np.int64)
    return np.concatenate(out)


OUTPUT_TILE = ("tile_m", "tile_n")  # a GEMM's output tile: its sides share L0C


def retilings(space: SearchSpace, rows: np.ndarray,
              names: tuple[str, ...] = OUTPUT_TILE) -> np.ndarray:
    """Every feasible config with all of ``names`` changed together from a row of
    ``rows``, the other parameters kept (none on a space without them).

    How a GEMM's output tile fits M and N over the cores decides most of its time,
    and the tile's sides share L0C's capacity: a tile that fills it cannot grow one
    side alone, so one-parameter steps cannot move from one shape's best tiling to
    the next shape's (batch 154's 80 x 400 to batch 178's 192 x 160)."""
    if not rows.size or not all(n in space.names for n in names):
        return np.zeros((0, len(space.shape)), dtype=np.int64)
    positions = tuple(space.names.index(n) for n in names)
    cand = np.concatenate([_changed(space, row, positions) for row in rows])
    return cand[space.is_feasible(cand)]


def categorical_flips(space: SearchSpace, row: np.ndarray) -> np.ndarray:
    """Every feasible config one categorical parameter away from ``row`` (each other
    choice of each, in the space's order), the ordered parameters kept.

    A random start sees a category only beside random other choices: where the few
    configs that drew it were bad for other reasons, a model blames the category and
    never proposes it beside good tiles again. The same config with that one choice
    changed tells the category's own effect."""
    cat = [j for j, p in enumerate(space.params) if p.kind == "categorical"]
    out = [_changed(space, row, (j,)) for j in cat]
    out = [block for block in out if block.shape[0]]
    if not out:
        return np.zeros((0, len(space.shape)), dtype=np.int64)
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


class BallCache:
    """The feasible balls of recently used centres, so a sampler refining around the
    same few configs does not regenerate them on every proposal.

    On the 11.8M-point study a radius-2 ball is every pair of its 10
    parameters changed together, about 1,500 rows checked for feasibility,
    most of a local move's time before this cache. Bounded (least recently
    used dropped first); one per sampler, for one space.
    """

    def __init__(self, space: SearchSpace, size: int = 64) -> None:
        self.space = space
        self.size = size
        self._balls: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()

    def ball(self, centre: np.ndarray, radius: int) -> np.ndarray:
        """:func:`ball` of ``centre``, from the cache when it is there (do not modify)."""
        key = (int(self.space.flat_id(np.asarray(centre)[None, :])[0]), radius)
        hit = self._balls.get(key)
        if hit is not None:
            self._balls.move_to_end(key)
            return hit
        out = ball(self.space, centre, radius)
        out.setflags(write=False)
        self._balls[key] = out
        if len(self._balls) > self.size:
            self._balls.popitem(last=False)
        return out


def steps_away(space: SearchSpace, centre: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per row of ``rows``: index steps from ``centre`` summed over parameters.

    An ordered parameter (a tile size, a level) counts how many choices it
    moved (16 -> 48 in a step-16 grid is 2); a categorical one counts 1 for
    any change.
    """
    delta = np.abs(rows - centre[None, :])
    categorical = np.array([p.kind == "categorical" for p in space.params])
    return np.where(categorical[None, :], delta > 0, delta).sum(axis=1)


def _changed(space: SearchSpace, row: np.ndarray, positions: tuple[int, ...]) -> np.ndarray:
    """``row`` with the parameters at ``positions`` set to every other combination of choices."""
    others = [np.delete(np.arange(space.shape[j]), row[j]) for j in positions]
    grids = np.meshgrid(*others, indexing="ij")
    n = grids[0].size
    block = np.repeat(np.asarray(row, dtype=np.int64)[None, :], n, axis=0)
    for j, g in zip(positions, grids, strict=True):
        block[:, j] = g.ravel()
    return block
