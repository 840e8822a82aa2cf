"""Exploring draws of the untrained sampler: a global model's pick among uniform configs.

Without a pretrained policy, the policy's draws after the first measurements
learn from the elites, and once the local moves (:mod:`._local`) have filled
the elites with one basin's configs the policy only draws that basin again.
On the recorded CLBlast GEMM spaces a run that settled on a 64-wide work-group
tile spent the rest of its budget there (1.2 of the optimum) while the optimum
sits among the 128-wide tiles, several parameters away: neither a move of one
or two parameters nor the policy ever left that basin.
So, once the local moves have started, the draws that are not moves take
``POOL`` feasible untried configs uniformly from the whole space and measure
the one that a Thompson draw of the local model's Bayesian ridge regression
(:mod:`._local_model`), fitted to every measurement with equal weight, scores
best: a global, cheap model whose draw of coefficients is as wide as what the
measurements leave uncertain, so untried regions get their turn while regions
measured as poor are skipped. Failed measurements count as the worst value,
as in the moves (docs/decisions/0008-reinforce-failures-as-worst-value.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aoe_optuna.samplers.reinforce._local import failures, successes
from aoe_optuna.samplers.reinforce._local_model import MIN_MEASURED, thompson_scores
from aoe_optuna.space.search_space import SearchSpace

POOL = 256  # uniform feasible untried configs the model chooses among


def model_draw(
    space: SearchSpace, rows: Sequence[np.ndarray], values: np.ndarray, tried_ids: set[int],
    rng: np.random.Generator, pool: int = POOL,
) -> np.ndarray | None:
    """An untried config chosen by the global model; None while it has too few measurements.

    ``rows``/``values``: every measured config and its throughput (nan = failed);
    ``tried_ids``: flat ids of every config proposed so far, in any state.
    """
    measured, logs = successes(rows, values)
    if logs.size < MIN_MEASURED:
        return None
    cand = space.sample_feasible(pool, rng, exclude=tried_ids)
    if cand.shape[0] == 0:
        return None
    failed = failures(rows, values)
    if failed.shape[0]:
        measured = np.concatenate([measured, failed])
        logs = np.concatenate([logs, np.full(failed.shape[0], logs.min())])
    scores = thompson_scores(space, measured, logs, np.ones(logs.size), cand, rng)
    return cand[int(np.argmax(scores))]
