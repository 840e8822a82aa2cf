"""A prior's predictions -> normal scores of their rank in the space, for the GP's mean.

The GP is fitted to copula targets (normal scores of the measured values'
ranks, ``_targets``); the prior enters its mean on the same scale: each
prediction is replaced by Phi^-1 of its rank among the predictions for a
reference set of feasible configs (every one where the space is enumerated,
else a seeded sample of ``REFERENCE_SIZE``). So a prior in any units (another
device's time, another shape's tokens/s, the simulator's) and any monotone
distortion of them gives the same scores. A config the prior cannot predict
gets the median score, 0; one it predicts to fail, the lowest.

Predictions are kept by flat id, so a prior is asked once per config; a
prior that recalibrates on the study's measurements (``observe``) drops them
when it says its predictions changed.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from aoe_optuna.samplers.priors.base import ConfigPrior, ObservingPrior
from aoe_optuna.space.search_space import SearchSpace

REFERENCE_SIZE = 4096


class PriorScores:
    """Normal scores of one prior's predictions on one space (larger is better)."""

    def __init__(self, prior: ConfigPrior, space: SearchSpace, maximize: bool,
                 reference_rows: np.ndarray) -> None:
        self.prior = prior
        self.space = space
        self.sign = 1.0 if maximize else -1.0
        self.reference_rows = reference_rows
        self._ids = np.zeros(0, dtype=np.int64)  # sorted flat ids with a known prediction
        self._raw = np.zeros(0)
        self._reference: np.ndarray | None = None

    @classmethod
    def for_space(cls, prior: ConfigPrior, space: SearchSpace, maximize: bool,
                  enumerated: np.ndarray | None, seed: int) -> PriorScores:
        """Scores ranked among ``enumerated`` (every feasible row), else a seeded sample."""
        if enumerated is None:
            rng = np.random.default_rng([seed, 0x9e1])
            enumerated = space.sample_feasible(REFERENCE_SIZE, rng)
        return cls(prior, space, maximize, enumerated)

    def observe(self, rows: np.ndarray, values: np.ndarray) -> None:
        """Hand the completed measurements to a prior that calibrates on them."""
        if (isinstance(self.prior, ObservingPrior) and rows.shape[0]
                and self.prior.observe(self.space, rows, values)):
            self._ids, self._raw, self._reference = np.zeros(0, dtype=np.int64), np.zeros(0), None

    def raw(self, rows: np.ndarray) -> np.ndarray:
        """The prior's predictions for ``rows``, larger is better (-inf: predicted to fail,
        as the prior says with an infinite value; NaN: no guess)."""
        rows = np.atleast_2d(rows)
        if rows.shape[0] == 0:
            return np.zeros(0)
        ids = self.space.flat_id(rows)
        pos = np.clip(np.searchsorted(self._ids, ids), 0, max(self._ids.shape[0] - 1, 0))
        known = (self._ids[pos] == ids) if self._ids.shape[0] else np.zeros(ids.shape, bool)
        out = np.empty(ids.shape[0])
        out[known] = self._raw[pos[known]]
        new = np.flatnonzero(~known)
        if new.shape[0]:
            new_ids, first = np.unique(ids[new], return_index=True)
            predicted = self.sign * np.asarray(
                self.prior.predict(self.space, rows[new[first]]), dtype=float)
            predicted = np.where(np.isinf(predicted), -np.inf, predicted)  # fails: the worst
            merged = np.concatenate([self._ids, new_ids])
            order = np.argsort(merged, kind="stable")
            self._ids = merged[order]
            self._raw = np.concatenate([self._raw, predicted])[order]
            out[new] = predicted[np.searchsorted(new_ids, ids[new])]
        return out

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """(n,) normal scores of ``rows``' predictions among the reference set's."""
        if self._reference is None:
            ref = self.raw(self.reference_rows)
            self._reference = np.sort(ref[~np.isnan(ref)])
        ref = self._reference
        raw = self.raw(rows)
        if ref.shape[0] == 0:
            return np.zeros(raw.shape[0])
        below = np.searchsorted(ref, raw, side="left")
        upto = np.searchsorted(ref, raw, side="right")
        rank = np.where(np.isneginf(raw), 0.0, 0.5 * (below + upto))
        scores = ndtri((rank + 0.5) / (ref.shape[0] + 1.0))
        return np.where(np.isnan(raw), 0.0, scores)
