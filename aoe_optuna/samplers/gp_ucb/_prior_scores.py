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

from aoe_optuna.samplers.priors.base import ConfigPrior, ObservingPrior
from aoe_optuna.samplers.priors.id_values import IdValues
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
        self._raw = IdValues()  # the prior's predictions by flat id
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
            self._raw.clear()
            self._reference = None

    def raw(self, rows: np.ndarray) -> np.ndarray:
        """The prior's predictions for ``rows``, larger is better (-inf: predicted to fail,
        as the prior says with an infinite value; NaN: no guess)."""
        rows = np.atleast_2d(rows)
        if rows.shape[0] == 0:
            return np.zeros(0)

        def predict(at: np.ndarray) -> np.ndarray:
            predicted = self.sign * np.asarray(self.prior.predict(self.space, rows[at]),
                                               dtype=float)
            return np.where(np.isinf(predicted), -np.inf, predicted)  # fails: the worst

        return self._raw.get(self.space.flat_id(rows), predict)

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
        from scipy.special import ndtri  # at the first scoring, not at the sampler's import

        scores = ndtri((rank + 0.5) / (ref.shape[0] + 1.0))
        return np.where(np.isnan(raw), 0.0, scores)
