"""A prior from measured configs: another device's recording, another study, a KB entry.

The table maps configs to the objective values measured elsewhere (in the
target study's direction: larger is better for throughput). A config that
failed there is predicted to be the worst (it most likely fails here too);
a config the table does not hold is predicted as the median of its
``NEIGHBOURS`` nearest measured configs in the space's encoding, so a table
of a few hundred measurements still ranks every config of a large space.
Parameters the target space has and the table lacks make the table unusable
(``TableError``); parameters the table has and the space lacks are dropped,
and configs that then coincide are averaged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from aoe_optuna.space.search_space import SearchSpace

NEIGHBOURS = 5
CHUNK = 4096


class TableError(ValueError):
    """A table that cannot predict for the space (no shared configs, missing parameters)."""


class TablePrior:
    """Predictions looked up in measured configs, the rest from their nearest neighbours."""

    def __init__(self, name: str, configs: Sequence[Mapping[str, Any]],
                 values: Sequence[float] | np.ndarray) -> None:
        values = np.asarray(values, dtype=float)
        if len(configs) != values.shape[0]:
            raise ValueError(f"{name}: {len(configs)} configs but {values.shape[0]} values")
        self.name = name
        self.configs = list(configs)
        self.values = values  # NaN or -inf: failed there
        self._known: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def _table_for(self, space: SearchSpace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sorted flat ids, their values, encoded rows) of the table's configs in ``space``."""
        key = id(space)
        if key not in self._known:
            missing = [n for n in space.names if self.configs and n not in self.configs[0]]
            if missing:
                raise TableError(f"{self.name}: expected the parameters of the space, "
                                 f"lacks {missing}")
            lookup = [{v: i for i, v in enumerate(p.choices)} for p in space.params]
            rows, vals = [], []
            for config, value in zip(self.configs, self.values, strict=True):
                try:
                    rows.append([lk[config[p.name]] for lk, p in zip(lookup, space.params,
                                                                      strict=True)])
                except (KeyError, TypeError):
                    continue  # a value this space does not offer
                vals.append(-np.inf if not np.isfinite(value) else float(value))
            if not rows:
                raise TableError(f"{self.name}: expected configs of the space, holds none")
            arr = np.asarray(rows, dtype=np.int64)
            ids, inverse = np.unique(space.flat_id(arr), return_inverse=True)
            v = np.asarray(vals)
            sums = np.zeros(ids.shape[0])
            counts = np.zeros(ids.shape[0])
            np.add.at(sums, inverse, np.where(np.isfinite(v), v, 0.0))
            np.add.at(counts, inverse, np.isfinite(v))
            failed = np.zeros(ids.shape[0], dtype=bool)
            np.logical_or.at(failed, inverse, ~np.isfinite(v))
            mean = np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf)
            mean = np.where(failed & (counts == 0), -np.inf, mean)
            self._known[key] = (ids, mean, space.encode(space.from_flat_id(ids)))
        return self._known[key]

    def predict(self, space: SearchSpace, rows: np.ndarray) -> np.ndarray:
        ids, vals, x_known = self._table_for(space)
        rows = np.atleast_2d(rows)
        want = space.flat_id(rows)
        pos = np.clip(np.searchsorted(ids, want), 0, ids.shape[0] - 1)
        hit = ids[pos] == want
        out = np.where(hit, vals[pos], np.nan)
        miss = np.flatnonzero(~hit)
        k = min(NEIGHBOURS, ids.shape[0])
        sq_known = (x_known * x_known).sum(1)
        for start in range(0, miss.shape[0], CHUNK):
            part = miss[start : start + CHUNK]
            x = space.encode(rows[part])
            sq = (x * x).sum(1)[:, None] - 2.0 * x @ x_known.T + sq_known[None, :]
            near = np.argpartition(sq, k - 1, axis=1)[:, :k]
            out[part] = np.median(vals[near], axis=1)
        return out


def shuffled(prior: TablePrior, seed: int = 0) -> TablePrior:
    """The same configs with their values permuted: a prior that carries no information
    but has the source's distribution of values (the misleading prior of the bench)."""
    rng = np.random.default_rng(seed)
    return TablePrior(f"{prior.name} (values shuffled)", prior.configs,
                      rng.permutation(prior.values))
