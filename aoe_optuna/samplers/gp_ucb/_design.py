"""Space-filling start: each start-up suggestion is the farthest feasible config.

Greedy maximin (farthest-point) over a seeded sample of the unseen feasible
candidates, measured in the encoded space against every config the study has
already touched (the enqueued baseline, other workers' running trials,
failures). Done one suggestion at a time it needs no stored design, is
deterministic for a seed and history, and parallel workers spread out
instead of duplicating each other.
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.samplers.gp_ucb._candidates import Candidates

DESIGN_POOL = 2048


def farthest_point(
    cands: Candidates, used_x: np.ndarray, rng: np.random.Generator, pool: int = DESIGN_POOL
) -> int:
    """Index into ``cands`` of the pool member farthest from ``used_x`` (random if none)."""
    m = cands.rows.shape[0]
    sub = rng.choice(m, size=min(pool, m), replace=False)
    if used_x.shape[0] == 0:
        return int(sub[0])
    x = cands.x[sub]
    sq = (x * x).sum(1)[:, None] - 2.0 * x @ used_x.T + (used_x * used_x).sum(1)[None, :]
    return int(sub[int(np.argmax(sq.min(axis=1)))])
