"""P(success) of a config, learned from the study's failed measurements.

A kernel-smoothed Beta-Bernoulli model: each observed config votes for success
or failure with a Gaussian weight on its distance in the encoded space, on top
of a Beta prior centred on the study's overall success rate:

    P(ok | x) = (a + sum_i w_i(x) ok_i) / (a + b + sum_i w_i(x))

It is cheap (one kernel block per candidate chunk), needs no iterative fit
that could fail, is exactly 1 where nothing failed yet, and its one length
scale is chosen by leave-one-out likelihood on the observed outcomes, then
one per encoded dimension (``_vote_relevance``), so that a failure warns every
config that shares the parameter values it failed for. A
classifier GP would be the textbook choice, but its variational fit costs
seconds per suggestion, more than the whole 0.5 s budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aoe_optuna.samplers.gp_ucb._vote_relevance import fit_inverse_scales

LENGTHSCALES = (0.05, 0.1, 0.2, 0.35, 0.6)  # in units of sqrt(encoded dims)
PRIOR_STRENGTH = 2.0  # pseudo-observations behind the prior success rate
CHUNK = 8192


@dataclass
class FeasibilityModel:
    x: np.ndarray  # (n, D) encoded observed configs, times inverse_scales
    ok: np.ndarray  # (n,) 1.0 success, 0.0 failure
    inverse_scales: np.ndarray  # (D,) 1 / length scale per encoded dimension (0: ignored)
    prior_a: float
    prior_b: float

    @classmethod
    def fit(cls, x_ok: np.ndarray, x_failed: np.ndarray) -> FeasibilityModel | None:
        """None while nothing has failed: then every config is taken as likely to succeed."""
        if x_failed.shape[0] == 0:
            return None
        x = np.concatenate([x_ok, x_failed])
        ok = np.concatenate([np.ones(x_ok.shape[0]), np.zeros(x_failed.shape[0])])
        rate = (ok.sum() + 1.0) / (ok.size + 2.0)
        a, b = PRIOR_STRENGTH * rate, PRIOR_STRENGTH * (1.0 - rate)
        scale = np.sqrt(x.shape[1])
        sq = _sq_dists(x, x)
        best, best_ll = LENGTHSCALES[0] * scale, -np.inf
        for ls in LENGTHSCALES:
            w = np.exp(-0.5 * sq / (ls * scale) ** 2)
            np.fill_diagonal(w, 0.0)  # leave one out
            p = (a + w @ ok) / (a + b + w.sum(1))
            ll = float(np.sum(ok * np.log(p) + (1 - ok) * np.log1p(-p)))
            if ll > best_ll:
                best, best_ll = ls * scale, ll
        inv = fit_inverse_scales(x, ok, 1.0 / best, a, b)
        return cls(x * inv, ok, inv, a, b)

    def predict(self, x: np.ndarray) -> np.ndarray:
        out = []
        for start in range(0, x.shape[0], CHUNK):
            part = x[start : start + CHUNK] * self.inverse_scales
            w = np.exp(-0.5 * _sq_dists(part, self.x))
            out.append((self.prior_a + w @ self.ok) / (self.prior_a + self.prior_b + w.sum(1)))
        return np.concatenate(out) if out else np.zeros(0)


def _sq_dists(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    sq = (a * a).sum(1)[:, None] - 2.0 * a @ b.T + (b * b).sum(1)[None, :]
    return np.maximum(sq, 0.0)
