"""Values kept by a config's flat id: what a prior already computed is not computed again."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class IdValues:
    """Float values by int64 flat id, in sorted arrays (a lookup is one searchsorted)."""

    def __init__(self) -> None:
        self.ids = np.zeros(0, dtype=np.int64)
        self.values = np.zeros(0)

    def clear(self) -> None:
        self.ids, self.values = self.ids[:0], self.values[:0]

    def get(self, ids: np.ndarray, compute: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """The values of ``ids``; ``compute(positions)`` gives those not kept yet, for the
        positions (into ``ids``) of one occurrence of each, and they are kept."""
        pos = np.clip(np.searchsorted(self.ids, ids), 0, max(self.ids.shape[0] - 1, 0))
        known = (self.ids[pos] == ids) if self.ids.shape[0] else np.zeros(ids.shape, bool)
        out = np.empty(ids.shape[0])
        out[known] = self.values[pos[known]]
        new = np.flatnonzero(~known)
        if new.shape[0]:
            new_ids, first = np.unique(ids[new], return_index=True)
            computed = np.asarray(compute(new[first]), dtype=float)
            merged = np.concatenate([self.ids, new_ids])
            order = np.argsort(merged, kind="stable")
            self.ids = merged[order]
            self.values = np.concatenate([self.values, computed])[order]
            out[new] = computed[np.searchsorted(new_ids, ids[new])]
        return out
