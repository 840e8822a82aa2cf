"""A prior from configs that won elsewhere: a knowledge base's entries of the same operator.

A knowledge base keeps each tuned problem's winner and the configs tied with it, not
the configs that lost, so it cannot predict a value the way a recording does
(:mod:`.table`). What it says is where good configs were found. A config is
predicted by how near it lies, in the GP's encoding of the space, to the nearest of
them, each entry's configs set back by how far its problem lies from the study's
(another shape, another SoC): the configs of the entry nearest the study's own
problem rank first, then their neighbours. The configs themselves join the
sampler's candidates (:meth:`NearConfigsPrior.noted_rows`), which a sampled pool
would otherwise hold only by chance. As with any prior, the sampler learns from
the measurements how far to trust it (``gp_ucb/_prior_model.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aoe_optuna.samplers.priors.table import TableError
from aoe_optuna.space.search_space import SearchSpace

CHUNK = 4096


@dataclass(frozen=True)
class Anchor:
    """A config that won (or tied the winner) elsewhere; ``away``: how far its problem
    lies from the study's, in the units of the encoding (0: the same problem)."""

    config: Mapping[str, Any]
    away: float


class NearConfigsPrior:
    """Predictions by nearness to the anchors' configs, the nearer problem first."""

    def __init__(self, name: str, anchors: Sequence[Anchor]) -> None:
        self.name = name
        self.anchors = list(anchors)
        self._known: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def _in_space(self, space: SearchSpace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(index rows, encoded rows, how far away) of the anchors the space holds."""
        key = id(space)
        if key not in self._known:
            rows, away = [], []
            for a in self.anchors:
                try:
                    rows.append(space.index(a.config))
                except (KeyError, ValueError, TypeError):  # ParamError is a ValueError
                    continue  # a parameter or value this space does not offer
                away.append(float(a.away))
            if not rows:
                raise TableError(f"{self.name}: expected configs of the space, holds none "
                                 f"(of {len(self.anchors)})")
            idx = np.asarray(rows, dtype=np.int64)
            self._known[key] = (idx, space.encode(idx), np.asarray(away))
        return self._known[key]

    def noted_rows(self, space: SearchSpace) -> np.ndarray:
        """The anchors' index rows that are feasible in ``space``: candidates to score
        beside a sampled pool."""
        idx, _, _ = self._in_space(space)
        return idx[space.is_feasible(idx)]

    def predict(self, space: SearchSpace, rows: np.ndarray) -> np.ndarray:
        _, x_known, away = self._in_space(space)
        rows = np.atleast_2d(rows)
        out = np.empty(rows.shape[0])
        sq_known = (x_known * x_known).sum(1)
        for start in range(0, rows.shape[0], CHUNK):
            x = space.encode(rows[start : start + CHUNK])
            sq = (x * x).sum(1)[:, None] - 2.0 * x @ x_known.T + sq_known[None, :]
            out[start : start + CHUNK] = -np.min(np.maximum(sq, 0.0) + away[None, :] ** 2,
                                                 axis=1)
        return out
