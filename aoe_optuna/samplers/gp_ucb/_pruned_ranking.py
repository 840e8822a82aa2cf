"""The best candidates by an acquisition that grows with the std, without every std.

At 1,000 trials the exact posterior std of 20,000 candidates is one
20,000 x 1,000 x 1,000 product, most of a suggestion's time; the mean is a
thousandth of it. Given a cheap upper bound of each std
(``Posterior.mean_and_bound``), a candidate's acquisition with the bound is
an upper bound of its acquisition, since UCB and its success weighting grow
with the std. So the exact std is computed block by block in the order of
the bounds, and the search stops once the ``k`` best exact values are no
worse than the next bound: the ``k`` best are then the same as with every
std computed (to the float32 rounding of the std).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

BLOCK = 256  # exact stds per step: the first block is mostly enough
FAST_FROM = 300  # completed trials from which the sampler ranks this way (SearchSettings)


@dataclass(frozen=True)
class CandidateModel:
    """A fitted model's posterior over one suggestion's candidates (by candidate index)."""

    predict: Callable[[], tuple[np.ndarray, np.ndarray]]  # mean and std of every one
    mean_and_bound: Callable[[], tuple[np.ndarray, np.ndarray]]  # mean, std's upper bound
    std: Callable[[np.ndarray], np.ndarray]  # the exact std of candidates idx


def best_first(score_of: Callable[[np.ndarray, np.ndarray], np.ndarray], bound: np.ndarray,
               exact_std: Callable[[np.ndarray], np.ndarray], k: int,
               block: int = BLOCK) -> tuple[np.ndarray, int]:
    """(indices of the ``k`` best candidates, best first; how many exact stds it took).

    ``score_of(idx, std)``: the acquisition of candidates ``idx`` at ``std``, nondecreasing
    in ``std``; ``bound``: per candidate an upper bound of its std; ``exact_std(idx)``:
    the exact std of candidates ``idx``."""
    n = bound.shape[0]
    upper = score_of(np.arange(n), bound)
    order = np.argsort(-upper, kind="stable")
    idx_done: list[np.ndarray] = []
    score_done: list[np.ndarray] = []
    done = 0
    while done < n:
        idx = order[done : done + block]
        idx_done.append(idx)
        score_done.append(score_of(idx, exact_std(idx)))
        done += idx.shape[0]
        if done >= n:
            break
        scores = np.concatenate(score_done)
        if scores.shape[0] >= k and np.partition(-scores, k - 1)[k - 1] <= -upper[order[done]]:
            break
    idx_all, scores = np.concatenate(idx_done), np.concatenate(score_done)
    top = min(k, scores.shape[0])
    best = np.argpartition(-scores, top - 1)[:top]
    best = best[np.argsort(-scores[best], kind="stable")]
    return idx_all[best], done
