"""Per-dimension length scales of the failure vote, chosen by leave-one-out likelihood.

Tuning configs fail by rules on a few parameters (a tile that overflows local
memory at one vector width), whatever the others are. A vote with one length
scale over all encoded dimensions cannot say so: two configs of the same
failing tile x width pair are far apart when their other parameters differ,
so a failure only warns its close neighbours and the search keeps walking
into the same region. With a length scale per dimension (automatic relevance
determination, as the objective's GP has) the dimensions the failures do not
depend on can stretch to "any value" and the region is learnt as a whole.

The scales are picked by coordinate search on a small grid, each accepted
only if it raises the leave-one-out log-likelihood of the observed outcomes,
starting from the best single scale: one extra parameter at a time, never a
worse fit than the isotropic vote on the data it has. Each trial costs one
n x n update, so the search stays cheap for the few hundred trials of a study.
"""

from __future__ import annotations

import numpy as np

# inverse length scales tried per dimension, in encoded units (0: the dimension is ignored)
INVERSE_SCALES = (0.0, 1.0, 1 / 0.6, 1 / 0.35, 1 / 0.2, 1 / 0.1, 1 / 0.05)
SWEEPS = 2


def loo_log_likelihood(
    sq: np.ndarray, ok: np.ndarray, prior_a: float, prior_b: float
) -> float:
    """Leave-one-out log-likelihood of ``ok`` under the vote with weights exp(-sq / 2)."""
    w = np.exp(-0.5 * sq)
    np.fill_diagonal(w, 0.0)
    p = (prior_a + w @ ok) / (prior_a + prior_b + w.sum(1))
    p = np.clip(p, 1e-12, 1.0 - 1e-12)
    return float(np.sum(ok * np.log(p) + (1.0 - ok) * np.log1p(-p)))


def fit_inverse_scales(
    x: np.ndarray, ok: np.ndarray, start: float, prior_a: float, prior_b: float,
    grid: tuple[float, ...] = INVERSE_SCALES, sweeps: int = SWEEPS,
) -> np.ndarray:
    """Inverse length scale per column of ``x`` (start: ``start`` on every column)."""
    n, d = x.shape
    inv = np.full(d, float(start))
    sq = np.zeros((n, n))
    cols = [(x[:, j, None] - x[None, :, j]) ** 2 for j in range(d)]
    for j in range(d):
        sq += inv[j] ** 2 * cols[j]
    best = loo_log_likelihood(sq, ok, prior_a, prior_b)
    for _ in range(sweeps):
        moved = False
        for j in range(d):
            if not cols[j].any():
                continue  # the column is constant over the trials: nothing to learn
            base = sq - inv[j] ** 2 * cols[j]
            for g in grid:
                if g == inv[j]:
                    continue
                trial = base + g * g * cols[j]
                ll = loo_log_likelihood(trial, ok, prior_a, prior_b)
                if ll > best + 1e-9:
                    best, inv[j], sq, moved = ll, g, trial, True
        if not moved:
            break
    return inv
