"""A locally weighted Bayesian linear model of log throughput, for local moves.

Within one or two parameters of a centre config, a tiling's log throughput is
close to additive in its parameters (pipeline 1 vs 2 costs about the same
everywhere near the centre; so does one more tile step). A ridge regression on
the one-hot parameter values, with each successfully measured config weighted
by ``DECAY**steps`` from the centre, learns those effects from every
measurement near it. A Thompson draw of its coefficients scores the candidate
moves: a move whose effect is known to be bad is seldom measured. The draws
are only as wide as the weighted residuals around the centre, so this is
mostly exploitation; the rings around it (``_local``) supply the exploration.
(Measured on the decode study, 80 seeds: it wins 25 and loses 14 of the seeds
against picking the move uniformly; docs/BENCHMARKS.md.)

The linear algebra runs in torch float64 on the caller's single torch thread,
so a draw is the same in every process for the same ``rng`` (numpy's BLAS may
split work across threads and round differently).
"""

from __future__ import annotations

import numpy as np
import torch

from aoe_optuna.samplers.neighbourhood import steps_away
from aoe_optuna.space import SearchSpace

MIN_MEASURED = 8  # successful measurements below which the move is drawn uniformly
DECAY = 0.7  # a measured config s index steps from the centre weighs DECAY**s
RIDGE = 1.0  # prior precision of each coefficient, relative to the residual noise


def onehot(space: SearchSpace, rows: np.ndarray) -> np.ndarray:
    """Design matrix: one column per (parameter, choice), plus an intercept."""
    offsets = np.concatenate([[0], np.cumsum(space.shape)[:-1]]).astype(np.int64)
    x = np.zeros((rows.shape[0], int(np.sum(space.shape)) + 1))
    x[:, -1] = 1.0
    x[np.arange(rows.shape[0])[:, None], rows + offsets[None, :]] = 1.0
    return x


def posterior(x: np.ndarray, y: np.ndarray, w: np.ndarray,
              ridge: float = RIDGE) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and covariance of the coefficients of weighted ridge regression.

    The noise variance is the weighted mean squared residual (floored); the
    prior on each coefficient is N(0, noise / ridge).
    """
    xt, yt, wt = (torch.as_tensor(a, dtype=torch.float64) for a in (x, y, w))
    xw = xt * wt[:, None]
    eye = torch.eye(xt.shape[1], dtype=torch.float64)
    chol = torch.linalg.cholesky(xw.T @ xt + ridge * eye)
    mean = torch.cholesky_solve((xw.T @ yt)[:, None], chol)[:, 0]
    resid = yt - xt @ mean
    noise = max(float((wt * resid**2).sum()) / max(float(wt.sum()), 1e-12), 1e-8)
    cov = noise * torch.cholesky_inverse(chol)
    return mean, (cov + cov.T) / 2


def thompson_choice(
    space: SearchSpace, centre: np.ndarray, measured: np.ndarray, logs: np.ndarray,
    candidates: np.ndarray, rng: np.random.Generator,
) -> np.ndarray:
    """The candidate with the highest log throughput under one posterior draw.

    ``measured``/``logs``: the successfully measured configs and their log
    throughput; each weighs ``DECAY**steps`` from ``centre``.
    """
    weights = DECAY ** steps_away(space, centre, measured).astype(float)
    mean, cov = posterior(onehot(space, measured), logs - logs.mean(), weights)
    z = torch.as_tensor(rng.standard_normal(mean.shape[0]), dtype=torch.float64)
    beta = (mean + torch.linalg.cholesky(cov) @ z).numpy()
    return candidates[int(np.argmax(onehot(space, candidates) @ beta))]
