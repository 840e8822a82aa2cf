"""Which choices keep a partial config feasible, and not yet tried.

The policy picks parameters one at a time in the space's order. Before each
pick, choices are masked out when no feasible config completes the partial
one with them (so the policy never proposes an infeasible config), and when
every feasible completion has already been tried (so it never proposes one
twice). On a materialised core both masks are exact: a per-position table
over the feasible core rows, keyed by the prefix, holds how many feasible
core completions each choice has. Larger cores fall back to
``SearchSpace.feasible_choices`` (sampling-based: it never allows a choice it
has not seen completed feasibly) and the caller resamples duplicates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aoe_optuna.space.search_space import SearchSpace


class _PrefixTable:
    """For one core position: feasible-core counts per (core prefix, choice)."""

    def __init__(self, rows: np.ndarray, p: int, core_shape: tuple[int, ...]) -> None:
        self.p = p
        self.core_shape = core_shape
        keys = self.key(rows)
        self.ukeys, inverse = np.unique(keys, return_inverse=True)
        self.counts = np.zeros((self.ukeys.shape[0], core_shape[p]), dtype=np.int64)
        np.add.at(self.counts, (inverse, rows[:, p]), 1)

    def key(self, core_rows: np.ndarray) -> np.ndarray:
        if self.p == 0:
            return np.zeros(core_rows.shape[0], dtype=np.int64)
        return np.ravel_multi_index(tuple(core_rows[:, : self.p].T), self.core_shape[: self.p])

    def lookup(self, core_rows: np.ndarray) -> np.ndarray:
        """Counts (n, k) for the prefixes of ``core_rows``; zeros for an unknown prefix."""
        keys = self.key(core_rows)
        pos = np.searchsorted(self.ukeys, keys).clip(0, self.ukeys.shape[0] - 1)
        found = self.ukeys[pos] == keys
        out = self.counts[pos].copy()
        out[~found] = 0
        return out


class ChoiceMasker:
    """Feasibility and exhaustion masks for autoregressive sampling over ``space``."""

    def __init__(self, space: SearchSpace) -> None:
        self.space = space
        self.exact = space.materialised
        self.shape = space.shape
        self.core = list(space.core)
        self._core_pos = {j: p for p, j in enumerate(self.core)}
        # free_after[j]: number of assignments of the free params after position j
        self._free_after = [
            int(np.prod([self.shape[i] for i in space.free if i > j], dtype=np.int64))
            for j in range(len(self.shape))
        ]
        self._tables: list[_PrefixTable] = []
        if self.exact:
            rows = space.feasible_core.astype(np.int64)
            self.n_feasible_core = rows.shape[0]
            core_shape = tuple(self.shape[i] for i in self.core)
            self._tables = [_PrefixTable(rows, p, core_shape) for p in range(len(self.core))]

    # ---------------------------------------------------------------- batches
    def feasible_batch(self, idx: np.ndarray, j: int) -> np.ndarray | None:
        """(n, k_j) masks for the prefixes ``idx[:, :j]``; None when not materialised."""
        if not self.exact:
            return None
        if j not in self._core_pos:
            return np.ones((idx.shape[0], self.shape[j]), dtype=bool)
        core_rows = idx[:, self.core]
        return self._tables[self._core_pos[j]].lookup(core_rows) > 0

    # ---------------------------------------------------------- one config
    def feasible(self, prefix: Sequence[int], j: int) -> np.ndarray:
        """Mask over parameter ``j``'s choices given the choices ``prefix`` of params 0..j-1."""
        names = self.space.names
        partial = {names[i]: int(c) for i, c in enumerate(prefix)}
        return np.asarray(self.space.feasible_choices(partial, names[j]), dtype=bool)

    def completions(self, prefix: Sequence[int], j: int) -> np.ndarray | None:
        """Per choice of param ``j``: how many feasible full configs extend ``prefix`` with it.

        None when the core is not materialised (counts would need enumeration).
        """
        if not self.exact:
            return None
        row = np.zeros((1, len(self.shape)), dtype=np.int64)
        row[0, :j] = prefix
        core_rows = row[:, self.core]
        if j in self._core_pos:
            counts = self._tables[self._core_pos[j]].lookup(core_rows)[0]
        else:
            counts = np.full(self.shape[j], self._core_matches(core_rows, j), dtype=np.int64)
        return counts * self._free_after[j]

    def _core_matches(self, core_rows: np.ndarray, j: int) -> int:
        """Feasible core rows that agree with the core choices made before position ``j``."""
        before = [p for p, i in enumerate(self.core) if i < j]
        if not before:
            return self.n_feasible_core
        last = before[-1]
        counts = self._tables[last].lookup(core_rows)[0]
        return int(counts[core_rows[0, last]])

    def allowed(self, prefix: Sequence[int], j: int, tried: np.ndarray) -> np.ndarray:
        """Feasible choices of param ``j`` that still have an untried completion.

        ``tried`` holds the index rows already proposed that agree with ``prefix``.
        """
        if not self.exact:
            return self.feasible(prefix, j)
        total = self.completions(prefix, j)
        assert total is not None
        used = np.bincount(tried[:, j], minlength=self.shape[j]) if tried.shape[0] else 0
        return total > used
