"""The configs the acquisition is maximised over: feasible, never tried, never running.

Spaces whose feasible set fits in memory (the 49k-point decode study, the
recorded GEMM spaces) are enumerated once (index rows, flat ids and the
encoding are cached on the sampler; they only depend on the space) and
scored whole. Larger ones (the 11.8M-point study) get a fresh pool each step:
uniform feasible samples plus every feasible one-parameter neighbour of the
best configs, so the search can both roam and refine. Past ``shrink_from``
completed trials the uniform part shrinks as ``pool_size * shrink_from / n``
(at least ``MIN_POOL``): scoring a candidate costs in proportion to the
trials, and a long study has already measured most of what a fresh uniform
sample would find.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aoe_optuna.samplers.neighbourhood import neighbours
from aoe_optuna.space.search_space import SearchSpace

ENUMERATE_LIMIT = 400_000
POOL_SIZE = 20_000
MIN_POOL = 2_000


def pool_size_at(pool_size: int, n_completed: int, shrink_from: int | None) -> int:
    """The uniform sample's size at ``n_completed`` trials (see the module's docstring)."""
    if shrink_from is None or n_completed <= shrink_from:
        return pool_size
    return max(min(pool_size, MIN_POOL), pool_size * shrink_from // n_completed)


@dataclass
class Candidates:
    rows: np.ndarray  # (m, d) index rows
    x: np.ndarray  # (m, D) encoded


class CandidateSource:
    """Unseen feasible candidates for one space (exact set or a refreshed pool)."""

    def __init__(
        self, space: SearchSpace, enumerate_limit: int = ENUMERATE_LIMIT,
        pool_size: int = POOL_SIZE,
        encode: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self.space = space
        self.encode = encode if encode is not None else space.encode
        self.pool_size = pool_size
        self.exact = space.n_feasible <= enumerate_limit
        self._rows: np.ndarray | None = None
        self._ids: np.ndarray | None = None
        self._x: np.ndarray | None = None

    def _enumerated(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._rows is None:
            rows = self.space.all_feasible()
            self._rows, self._ids, self._x = rows, self.space.flat_id(rows), self.encode(rows)
        assert self._ids is not None and self._x is not None
        return self._rows, self._ids, self._x

    def enumerated_rows(self) -> np.ndarray:
        """Every feasible index row (an exact source only)."""
        return self._enumerated()[0]

    def unseen(
        self, seen: set[int], rng: np.random.Generator, incumbents: np.ndarray,
        pool_size: int | None = None, noted: np.ndarray | None = None,
    ) -> Candidates:
        """Candidates not in ``seen`` (flat ids of every trial of the study); a sampled
        pool of ``pool_size`` uniform draws (default: the source's), the neighbours of
        the ``incumbents``, and the feasible configs a prior names (``noted``) with
        their neighbours."""
        if self.exact:
            rows, ids, x = self._enumerated()
            keep = ~np.isin(ids, np.fromiter(seen, dtype=np.int64, count=len(seen)))
            return Candidates(rows[keep], x[keep])
        size = self.pool_size if pool_size is None else pool_size
        pool = [self.space.sample_feasible(size, rng, exclude=seen)]
        if incumbents.shape[0]:
            pool.append(neighbours(self.space, incumbents))
        if noted is not None and noted.shape[0]:
            pool += [noted, neighbours(self.space, noted)]
        rows = np.concatenate(pool)
        # distinct rows in lexicographic order, as np.unique(rows, axis=0) gives them: a
        # flat id is the row read as a mixed-radix number, first column most significant,
        # so sorting the ids sorts the rows (and one sort of int64 is much faster)
        ids, first = np.unique(self.space.flat_id(rows), return_index=True)
        keep = ~np.isin(ids, np.fromiter(seen, dtype=np.int64, count=len(seen)))
        rows = rows[first[keep]]
        return Candidates(rows, self.encode(rows))
