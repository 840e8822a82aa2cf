"""A locally weighted Bayesian linear model of log throughput, for local moves.

Within one or two parameters of a centre config, a tiling's log throughput is
close to additive in its parameters (pipeline 1 vs 2 costs about the same
everywhere near the centre; so does one more tile step). A ridge regression on
the one-hot parameter values, with each measured config weighted by
``decay**steps`` from the centre, learns those effects from every measurement
near it, including the other configs' noise. A Thompson draw of its
coefficients scores the candidate moves: a move whose effect is known to be
bad is seldom measured, one the model knows little about is drawn now and
then. (Measured on the decode study, 80 seeds: it wins 25 and loses 14 of the
seeds against picking the move uniformly; docs/BENCHMARKS.md.)
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.space import SearchSpace

MIN_MEASURED = 8  # below this the model has too little to say; the move is uniform
DECAY = 0.7  # a measured config s index steps from the centre weighs DECAY**s
RIDGE = 1.0  # prior precision of each coefficient (log-throughput units)


def onehot(space: SearchSpace, rows: np.ndarray) -> np.ndarray:
    """Design matrix: one column per (parameter, choice), plus an intercept."""
    offsets = np.concatenate([[0], np.cumsum(space.shape)[:-1]]).astype(np.int64)
    x = np.zeros((rows.shape[0], int(np.sum(space.shape)) + 1))
    x[:, -1] = 1.0
    x[np.arange(rows.shape[0])[:, None], rows + offsets[None, :]] = 1.0
    return x


def posterior(x: np.ndarray, y: np.ndarray, w: np.ndarray,
              ridge: float = RIDGE) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of the coefficients of weighted ridge regression.

    The noise variance is the weighted mean squared residual (floored), so the
    draws are as wide as the measurements around the centre are scattered.
    """
    xw = x * w[:, None]
    precision = xw.T @ x + ridge * np.eye(x.shape[1])
    mean = np.linalg.solve(precision, xw.T @ y)
    resid = y - x @ mean
    noise = max(float((w * resid**2).sum() / max(float(w.sum()), 1e-12)), 1e-8)
    cov = noise * np.linalg.inv(precision)
    return mean, (cov + cov.T) / 2


def thompson_choice(
    space: SearchSpace, measured: np.ndarray, logs: np.ndarray, weights: np.ndarray,
    candidates: np.ndarray, rng: np.random.Generator,
) -> np.ndarray:
    """The candidate with the highest log throughput under one posterior draw."""
    mean, cov = posterior(onehot(space, measured), logs - logs.mean(), weights)
    beta = rng.multivariate_normal(mean, cov, method="cholesky")
    return candidates[int(np.argmax(onehot(space, candidates) @ beta))]
