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
n x n update; past ``FIT_LIMIT`` trials the scales are fitted on every failure
and an even spread of the successes, so a long study's step stays cheap.
"""

from __future__ import annotations

import numpy as np

# inverse length scales tried per dimension, in encoded units (0: the dimension is ignored)
INVERSE_SCALES = (0.0, 1.0, 1 / 0.6, 1 / 0.35, 1 / 0.2, 1 / 0.1, 1 / 0.05)
SWEEPS = 2
FIT_LIMIT = 600  # trials the scales are fitted on (failures first)


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
    x, ok = _fit_subset(x, ok, FIT_LIMIT)
    n, d = x.shape
    inv = np.full(d, float(start))
    sq = np.zeros((n, n))
    for j in range(d):
        sq += inv[j] ** 2 * _column_sq(x, j)
    best = loo_log_likelihood(sq, ok, prior_a, prior_b)
    for _ in range(sweeps):
        moved = False
        for j in range(d):
            col = _column_sq(x, j)
            if not col.any():
                continue  # the column is constant over the trials: nothing to learn
            base = sq - inv[j] ** 2 * col
            for g in grid:
                if g == inv[j]:
                    continue
                trial = base + g * g * col
                ll = loo_log_likelihood(trial, ok, prior_a, prior_b)
                if ll > best + 1e-9:
                    best, inv[j], sq, moved = ll, g, trial, True
        if not moved:
            break
    return inv


def _column_sq(x: np.ndarray, j: int) -> np.ndarray:
    return (x[:, j, None] - x[None, :, j]) ** 2


def _fit_subset(x: np.ndarray, ok: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``limit`` rows: the failures first, then successes evenly spaced."""
    if x.shape[0] <= limit:
        return x, ok
    failed, fine = np.flatnonzero(ok == 0)[:limit], np.flatnonzero(ok != 0)
    room = limit - failed.size
    keep = np.concatenate([failed, fine[np.linspace(0, fine.size - 1, room).astype(int)]
                           if room > 0 and fine.size else failed[:0]])
    return x[keep], ok[keep]
