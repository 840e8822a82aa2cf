"""Upper confidence bound, weighted by the probability that a config succeeds.

UCB(x) = mean(x) + sqrt(beta) * std(x) on the standardised log-throughput.
beta = 3.84 is the textbook "mean + 1.96 std" rule; the default is 9 ("mean +
3 std"; why: docs/decisions/0002-gp-ucb-beta-9-and-8-start-configs.md). The
optional schedule is GP-UCB's
for a finite domain D (Srinivas et al., ICML 2010, Theorem 1):

    beta_t = 2 log(|D| t^2 pi^2 / (6 delta))

which is known to over-explore in practice (about 40 at t=100 on a 49k space),
so it is multiplied by ``scale`` (the usual remedy, e.g. Kandasamy et al. use
a fraction of it) and never goes below the constant beta. With scale 0.1 it
stays under the default beta of 9 on every space here (5.2 at t = 1000 on
10^4 configs), so it only matters with a smaller constant beta.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

DEFAULT_BETA = 9.0
CHANCE_MIN_SUCCESS = 0.5  # "chance" weighting: eligible configs run at least every other time


BetaSchedule = Literal["srinivas"]  # GP-UCB's growing beta (Srinivas et al. 2010), scaled


def beta_at(
    t: int, n_domain: int, beta: float = DEFAULT_BETA, schedule: BetaSchedule | None = None,
    delta: float = 0.1, scale: float = 0.1,
) -> float:
    """Exploration weight for the ``t``-th model-based suggestion (t >= 1)."""
    if schedule is None:
        return beta
    if schedule != "srinivas":
        raise ValueError(f"beta_schedule: expected None or 'srinivas', got {schedule!r}")
    t = max(t, 1)
    return max(beta, scale * 2.0 * math.log(max(n_domain, 1) * t * t * math.pi**2 / (6 * delta)))


def ucb(mean: np.ndarray, std: np.ndarray, beta: float) -> np.ndarray:
    return mean + math.sqrt(beta) * std


def weighted_by_success(
    value: np.ndarray, p_success: np.ndarray | None, floor: float
) -> np.ndarray:
    """P(success) * (UCB - floor): a config twice as likely to fail is worth half.

    ``floor`` must lie below every UCB value (the caller uses min(mean) -
    sqrt(beta) * max std), so the product is monotone in both factors.
    """
    if p_success is None:
        return value
    return p_success * (value - floor)


def improvement_if_feasible(
    value: np.ndarray, p_success: np.ndarray, best_mean: float
) -> np.ndarray:
    """P(success) * max(UCB - best predicted mean, 0): the optimistic gain, if it runs.

    For studies whose failures are dense and cheap (a plain study of a recorded
    space: a config outside it is told FAIL, nothing is built). There
    ``weighted_by_success``'s far floor makes the P(success) factor vary more
    than the UCB term, so the search settles next to configs that ran instead
    of where it can improve; where a failure costs a build, that is the point. As
    constrained expected improvement (Gardner et al., ICML 2014; Optuna's
    GPSampler) multiplies the improvement over the incumbent by P(feasible),
    this multiplies UCB's optimistic improvement over the best predicted mean.
    Where no candidate's UCB exceeds that mean (no std left), it falls back to
    the UCB order weighted by P(success).
    """
    gain = np.maximum(value - best_mean, 0.0)
    if not (gain > 0).any():
        return p_success * (value - float(value.min()) + 1.0)
    return p_success * gain


def by_feasibility(
    score: np.ndarray, p_success: np.ndarray, weighting: str,
    mean: np.ndarray, std: np.ndarray, beta: float,
) -> np.ndarray:
    """UCB ``score`` weighted by P(success): "success", "chance" or "gain"
    (GPUCBSampler's ``failures.weighting``, "auto" resolved)."""
    if weighting == "gain":
        return improvement_if_feasible(score, p_success, float(mean.max()))
    if weighting == "chance":
        return within_chance_constraint(score, p_success, CHANCE_MIN_SUCCESS)
    return weighted_by_success(score, p_success, success_floor(mean, std, beta))


def success_floor(mean: np.ndarray, std: np.ndarray, beta: float) -> float:
    """A value below every UCB: the lowest mean less sqrt(beta) times the largest std
    (at least 1, the GP's prior std), for ``weighted_by_success``."""
    return float(mean.min() - math.sqrt(beta) * max(float(std.max()), 1.0))


def within_chance_constraint(
    value: np.ndarray, p_success: np.ndarray, min_success: float
) -> np.ndarray:
    """UCB among the configs with P(success) >= ``min_success``; the rest after, by P.

    The chance-constrained form of constrained BO (Gelbart et al., UAI 2014):
    a config is eligible when it is likely enough to run, and among the
    eligible ones UCB alone decides, so a config next to the rule's edge is
    not discounted for being there (the optimum of a tiling space often is:
    the widest vectors the tile still divides). It needs a calibrated P: a
    model whose P shrinks toward the base rate would rule out whole regions.
    """
    eligible = p_success >= min_success
    if not eligible.any():
        return p_success
    return np.where(eligible, value, float(value[eligible].min()) - 1.0 + p_success)
