"""A locally weighted Bayesian linear model of log throughput, for local moves.

Within one or two parameters of a centre config, a tiling's log throughput
is mostly additive in its parameters (l1_prefetch on costs about the same
everywhere near the centre; so does one more tile step), but not entirely: a
size's effect depends on the others. On the decode study the configs ranked
5-10 (within 0.15% of the optimum) switch double for single buffering *and*
double tile_k, so single buffering looks bad to an additive model fitted
around the optimum, and moves there are almost never made
(docs/decisions/0007-reinforce-local-model-size-terms.md). So the design
matrix is the one-hot parameter values plus size terms (:func:`size_terms`):
each size's log, its slope per choice of every other parameter, and the
products of sizes' logs. A ridge regression on it, with
each successfully measured config weighted by ``DECAY**steps`` from the
centre, learns those effects from every measurement near it. A Thompson draw
of its coefficients scores the candidate moves: a move whose effect is known
to be bad is seldom measured. The draws are only as wide as the weighted
residuals around the centre, so this is mostly exploitation; the rings
around it (``_local``) supply the exploration.

The linear algebra runs in torch float64 on the caller's single torch thread,
so a draw is the same in every process for the same ``rng`` (numpy's BLAS may
split work across threads and round differently).
"""

from __future__ import annotations

import numpy as np
import torch

from aoe_optuna.samplers.neighbourhood import steps_away
from aoe_optuna.space.params import TILE_NAMES
from aoe_optuna.space.search_space import SearchSpace

MIN_MEASURED = 8  # successful measurements below which the move is drawn uniformly
DECAY = 0.7  # a measured config s index steps from the centre weighs DECAY**s
RIDGE = 1.0  # prior precision of each coefficient, relative to the residual noise


def onehot(space: SearchSpace, rows: np.ndarray) -> np.ndarray:
    """One column per (parameter, choice), plus an intercept."""
    offsets = np.concatenate([[0], np.cumsum(space.shape)[:-1]]).astype(np.int64)
    x = np.zeros((rows.shape[0], int(np.sum(space.shape)) + 1))
    x[:, -1] = 1.0
    x[np.arange(rows.shape[0])[:, None], rows + offsets[None, :]] = 1.0
    return x


def size_params(space: SearchSpace) -> list[int]:
    """The tile sizes of a GEMM tiling space (tile_m, tile_k, tile_n), as parameter positions.

    Only these: their capacity trade-offs are the interactions that matter on
    the Ascend tiling studies. The same terms for every numeric parameter of a
    recorded CLBlast space (a dozen of them) over-fit a model of the few
    measurements near a centre (docs/decisions/0007-reinforce-local-model-size-terms.md).
    """
    return [i for i, p in enumerate(space.params)
            if p.name in TILE_NAMES and len(p.choices) > 1
            and all(isinstance(c, int | float) and not isinstance(c, bool) and c > 0
                    for c in p.choices)]


def size_terms(space: SearchSpace, rows: np.ndarray) -> np.ndarray:
    """Columns that let a size's effect depend on the other parameters.

    With ``l_q`` the log2 of size parameter ``q`` (centred over its choices):
    each ``l_q``; for every choice ``k`` of every other parameter ``c``,
    ``[c == k] * l_q``; for every pair of sizes, ``l_q * l_r``. None of them
    when the space has no tile size.
    """
    sizes = size_params(space)
    if not sizes:
        return np.zeros((rows.shape[0], 0))
    logs = []
    for q in sizes:
        table = np.log2(np.asarray(space.params[q].choices, dtype=float))
        logs.append((table - table.mean())[rows[:, q]])
    cols = list(logs)
    for c in (i for i in range(len(space.params)) if i not in sizes):
        for k in range(space.shape[c]):
            chosen = (rows[:, c] == k).astype(float)
            cols.extend(chosen * v for v in logs)
    for a in range(len(logs)):
        cols.extend(logs[a] * logs[b] for b in range(a + 1, len(logs)))
    return np.stack(cols, axis=1)


def design(space: SearchSpace, rows: np.ndarray) -> np.ndarray:
    """The model's design matrix: :func:`onehot`, then :func:`size_terms`."""
    x = onehot(space, rows)
    return np.concatenate([x, size_terms(space, rows)], axis=1)


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
    scores = thompson_scores(space, measured, logs, weights, candidates, rng)
    return candidates[int(np.argmax(scores))]


def thompson_scores(
    space: SearchSpace, measured: np.ndarray, logs: np.ndarray, weights: np.ndarray,
    candidates: np.ndarray, rng: np.random.Generator,
) -> np.ndarray:
    """Per candidate, its log throughput (less the mean) under one posterior draw of
    the model fitted to ``measured`` with ``weights``."""
    mean, cov = posterior(design(space, measured), logs - logs.mean(), weights)
    z = torch.as_tensor(rng.standard_normal(mean.shape[0]), dtype=torch.float64)
    beta = (mean + torch.linalg.cholesky(cov) @ z).numpy()
    return design(space, candidates) @ beta
