"""What the GP is fitted to: observed throughputs -> targets on a standard scale.

Tuning spaces have a long slow tail: on the recorded RTX 2080 Ti GEMM the
worst configs are 14x slower than the best, even in log scale a few of them
sit four standard deviations below the good region. A GP with a constant
mean fitted to such targets puts its mean near the tail, so every config far
from the data is predicted slow and UCB stops exploring, and runs stay in a
basin (docs/decisions/0001-gp-ucb-copula-targets.md).

``copula`` replaces each value by the standard normal quantile of its rank
(the Gaussian copula transform; HEBO and others warp outputs the same way):
the order is kept, the tail is squeezed to the same scale as the top, and
the targets are N(0, 1)-like whatever the landscape, so one beta suits every
space. ``log`` is the plain log-throughput standardised to mean 0, std 1.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

TargetTransform = Literal["copula", "log"]
TRANSFORMS: tuple[TargetTransform, ...] = get_args(TargetTransform)


def standardised(y: np.ndarray) -> np.ndarray:
    """Mean 0, standard deviation 1 (only centred when all values are equal)."""
    y = np.asarray(y, dtype=float)
    if y.size < 2 or y.std() == 0:
        return y - (y.mean() if y.size else 0.0)
    return (y - y.mean()) / y.std()


def average_ranks(y: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their mean rank (scipy.stats.rankdata's default, written
    here because importing scipy.stats costs every aoe-tune process about a second)."""
    y = np.asarray(y, dtype=float)
    ranks = np.empty(y.size)
    ranks[np.argsort(y, kind="stable")] = np.arange(1, y.size + 1)
    _, tie_group, tie_size = np.unique(y, return_inverse=True, return_counts=True)
    return np.bincount(tie_group, weights=ranks)[tie_group] / tie_size[tie_group]


def gaussian_copula(y: np.ndarray) -> np.ndarray:
    """Normal scores of the ranks: Phi^-1((rank - 1/2) / n), ties sharing their mean rank."""
    y = np.asarray(y, dtype=float)
    if y.size < 2:
        return np.zeros_like(y)
    from scipy.special import ndtri  # at the first fit: ~0.1 s a start need not pay

    return ndtri((average_ranks(y) - 0.5) / y.size)


def targets(
    values: np.ndarray, transform: str = "copula", maximize: bool = True,
    floor_quantile: float | None = None,
) -> np.ndarray:
    """GP targets from raw objective values: larger is better, standardised.

    Values are taken in log scale when all are positive (throughputs). ``floor_quantile``
    raises the values below that quantile to it before the transform.
    """
    if transform not in TRANSFORMS:
        raise ValueError(f"target_transform: expected one of {TRANSFORMS}, got {transform!r}")
    y = np.asarray(values, dtype=float)
    if y.size and (y > 0).all():
        y = np.log(y)
    if not maximize:
        y = -y
    if floor_quantile is not None and y.size:
        y = np.maximum(y, np.quantile(y, floor_quantile))
    if transform == "copula":
        return standardised(gaussian_copula(y))
    return standardised(y)
