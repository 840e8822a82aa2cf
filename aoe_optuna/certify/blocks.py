"""The noise of one re-timing, estimated from rounds as blocks: drift between rounds cancels.

Every candidate still in the race is timed once per round, the rounds interleaved,
so a slow spell of the machine (clocks, another job, the L2's state) raises every
candidate of its round alike. On log costs this is a randomized complete block
design (candidates x rounds): the residual of ``y[c, r] - mean_c - mean_r + mean``
is what a round's shared drift leaves of one timing's noise, with (k - 1)(n - 1)
degrees of freedom pooled over all candidates, so a difference of two candidates'
means has variance ``2 sigma^2 / n`` however large the drift.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def residual_sigma(y: np.ndarray) -> tuple[float, int]:
    """(sigma, degrees of freedom) of one log cost's noise after the round effects, from a
    candidates x rounds array; (nan, 0) when there is no freedom left (one row or column)."""
    k, n = y.shape
    df = (k - 1) * (n - 1)
    if df <= 0:
        return math.nan, 0
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
    return math.sqrt(float((resid**2).sum()) / df), df


def own_sigma(rows: list[np.ndarray]) -> tuple[float, int]:
    """(sd, degrees of freedom) of one log cost around its own candidate's mean, pooled
    over candidates (timings of similar kernels share their noise): the spread a single
    candidate's mean has, drift included (nothing cancels it for one candidate)."""
    df = sum(len(y) - 1 for y in rows if len(y) >= 2)
    if df <= 0:
        return math.nan, 0
    ss = sum(float(((y - y.mean()) ** 2).sum()) for y in rows if len(y) >= 2)
    return math.sqrt(ss / df), df


def with_floor(sigma: float, df: int, floor: float | None) -> tuple[float, int]:
    """``sigma`` no lower than ``floor`` (the noise one timing's own repeats show): a few
    rounds that agree by chance must not claim more precision than a timing has. With no
    estimate (df 0), the floor alone, taken as known (df -1: a normal quantile)."""
    if floor is not None and floor > 0:
        if df <= 0 or not math.isfinite(sigma):
            return floor, -1
        return max(sigma, floor), df
    return sigma, df


def quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (df < 0: known
    sigma, the normal's)."""
    from scipy.special import ndtri, stdtrit  # at first use: a run that never races,
    # or races nothing, spares every process its import (~0.15 s); scipy.stats ~1 s

    return float(ndtri(p)) if df < 0 else float(stdtrit(df, p))


def cdf(x: float, df: int) -> float:
    """Student's t distribution function (df < 0: the normal's)."""
    from scipy.special import ndtr, stdtr

    return float(ndtr(x)) if df < 0 else float(stdtr(df, x))


def round_adjusted_means(rows: list[np.ndarray], iterations: int = 50) -> np.ndarray:
    """Each candidate's mean log cost with the rounds' shared drift taken out: the least
    squares fit of ``y[c, r] = mu_c + beta_r`` on a table where candidate ``c`` was timed
    in rounds ``0 .. len(rows[c]) - 1`` (a candidate that left the race has fewer). With
    complete rounds it is each candidate's own mean; where some left early, a round
    that was slow for those still racing does not count against them."""
    n = max((len(y) for y in rows), default=0)
    if n == 0:
        return np.full(len(rows), math.nan)
    mask = np.zeros((len(rows), n), dtype=bool)
    y = np.zeros((len(rows), n))
    for i, row in enumerate(rows):
        mask[i, :len(row)] = True
        y[i, :len(row)] = row
    beta = np.zeros(n)
    mu = np.zeros(len(rows))
    per_row, per_round = mask.sum(axis=1), np.maximum(mask.sum(axis=0), 1)
    for _ in range(iterations):
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = ((y - beta) * mask).sum(axis=1) / per_row
        beta = np.where(mask, y - mu[:, None], 0.0).sum(axis=0) / per_round
        beta -= beta.mean()  # rounds average to none: a complete table gives own means
    return mu


@dataclass(frozen=True)
class BlockFit:
    """Timings in incomplete rounds (each round times some of the candidates) fitted as
    ``y = mu_c + beta_r + e``: ``mu``, each candidate's mean log cost (NaN where it has no
    timing); ``sigma`` and ``df``, one timing's noise within a round and its degrees of
    freedom (nan and 0 with none left); ``drift``, the rounds' spread as the data show
    it, relative to ``sigma`` (the variance ratio ``gamma``)."""

    mu: np.ndarray
    sigma: float
    df: int
    gamma: float
    _cov: np.ndarray  # of mu, in units of sigma^2
    _gram: np.ndarray

    def diff_se(self, i: int, j: int, sigma: float) -> float:
        """The standard error of ``mu[i] - mu[j]`` at noise ``sigma``; inf where the
        timings do not tie the two together (the difference is not estimable)."""
        c = np.zeros(len(self.mu))
        c[i], c[j] = 1.0, -1.0
        if not np.allclose(self._gram @ (self._cov @ c), c, atol=1e-8):
            return math.inf
        return sigma * math.sqrt(max(float(c @ self._cov @ c), 0.0))


def block_fit(k: int, cands: Sequence[int], rounds: Sequence[int], y: Sequence[float]
              ) -> BlockFit:
    """Fit log costs ``y[t]`` of candidate ``cands[t]`` timed in round ``rounds[t]`` (``k``
    candidates) with the rounds' drift as a random effect: the recovery of inter-block
    information (Yates, "The recovery of inter-block information in balanced incomplete
    block designs", Annals of Eugenics 10, 1940). ``sigma`` comes from the differences
    within rounds (drift cancels there), the drift's variance from how much more the
    candidates' spread is once rounds are ignored (Henderson's method III). Where the
    rounds drift, a candidate's mean is estimated within its rounds, as the race's
    blocks do; where they do not, timings of different rounds compare directly, so two
    rivals each timed beside the leader in rounds of their own compare as closely as
    their timings allow. With complete rounds it is each candidate's own mean,
    :func:`residual_sigma`, and a difference's variance ``2 sigma^2 / n``."""
    yy = np.asarray(y, dtype=float)
    n = len(yy)
    ids = {r: i for i, r in enumerate(sorted(set(rounds)))}
    x = np.zeros((n, k))
    z = np.zeros((n, len(ids)))
    for t, (c, r) in enumerate(zip(cands, rounds, strict=True)):
        x[t, c] = 1.0
        z[t, ids[r]] = 1.0
    if n == 0:
        nan = np.full(k, math.nan)
        return BlockFit(nan, math.nan, 0, 0.0, np.zeros((k, k)), np.zeros((k, k)))
    within = np.hstack([x, z[:, 1:]])
    rss_w, df_w = _residual(within, yy)
    rss_x, df_x = _residual(x, yy)
    sigma2 = rss_w / df_w if df_w > 0 else math.nan
    m_x = np.eye(n) - x @ np.linalg.pinv(x)
    trace = float(np.trace(z.T @ m_x @ z))
    if not (math.isfinite(sigma2) and sigma2 > 0):
        gamma = 1e6 if trace > 1e-9 else 0.0  # no noise estimate: rounds as fixed effects
    elif trace > 1e-9:
        gamma = max(0.0, (rss_x - rss_w - (df_x - df_w) * sigma2) / trace) / sigma2
    else:
        gamma = 0.0
    w = np.linalg.inv(np.eye(n) + gamma * (z @ z.T))
    gram = x.T @ w @ x
    cov = np.linalg.pinv(gram)
    timed = x.sum(axis=0) > 0
    mu = np.where(timed, cov @ x.T @ w @ yy, math.nan)
    return BlockFit(mu, math.sqrt(sigma2) if math.isfinite(sigma2) else math.nan,
                    df_w if df_w > 0 else 0, gamma, cov, gram)


def _residual(x: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    """(residual sum of squares, degrees of freedom) of least squares of ``y`` on ``x``."""
    coef = np.linalg.pinv(x) @ y
    return float(((y - x @ coef) ** 2).sum()), len(y) - int(np.linalg.matrix_rank(x))
