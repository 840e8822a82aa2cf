"""Local proposals: small moves around the configs that measure best, noise smoothed.

A policy with one categorical head per parameter puts its mass on a handful of
whole configs; once the no-repeat mask has used those up, its next draws are
not their neighbours but ordinary configs: a pretrained policy's proposals
drift away from the optimum as the study goes on, and REINFORCE updates do
not stop it (docs/decisions/0006-reinforce-local-moves.md). A local proposal
supplies the neighbourhood structure the heads lack:

1. a centre: of the ``SMOOTH_POOL`` best successful measurements, the
   ``CENTRES`` best by a smoothed log value (their own and their measured
   neighbours', nearer ones weighing more), the k-th drawn with weight
   ``CENTRE_DECAY**k``; smoothing keeps one lucky measurement under 1% noise
   from holding the search on a config whose region is worse;
2. a ring: the untried feasible configs that change one or two parameters,
   grouped by how many index steps they move (``steps_away``), one ring drawn
   with weight ``RING_DECAY**steps``: mostly one-step moves, sometimes longer;
3. the config of that ring that a Thompson draw of a locally weighted linear
   model of the measurements scores best (:mod:`._local_model`; uniform
   while fewer than ``MIN_MEASURED`` configs have measured successfully).

Failed measurements count as tried, are never a centre, and enter the model
as the worst value measured so far, so moves towards a region that fails to
build (hidden constraints) are predicted bad
(docs/decisions/0008-reinforce-failures-as-worst-value.md). Drawing the
config within the ring by the policy's probability was worse (the policy's
preferences are what kept it in the wrong basin), and so was letting the
model choose among every candidate without the ring (it wanders off along
long moves).
The policy still proposes the first configs and, when it was pretrained, a
share of the rest (untrained, that share is a global model's pick, :mod:`._explore`);
it learns from every measurement, local ones included.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aoe_optuna.samplers.neighbourhood import BallCache, ball, steps_away
from aoe_optuna.samplers.reinforce._local_model import MIN_MEASURED, thompson_choice
from aoe_optuna.space.search_space import SearchSpace

CENTRES = 4  # the top (smoothed) configs a local proposal starts from
CENTRE_DECAY = 0.5  # the k-th of them is chosen with weight CENTRE_DECAY**k
SMOOTH_POOL = 32  # best raw measurements whose smoothed value is computed
SMOOTH_STEPS = 2  # measured configs this many index steps away count as neighbours
SMOOTH_DECAY = 0.2  # a neighbour s steps away weighs SMOOTH_DECAY**s (the config itself 1)
MAX_RADIUS = 2  # parameters changed at once
RING_DECAY = 0.3  # a move s index steps long is drawn with weight RING_DECAY**s


def failures(rows: Sequence[np.ndarray], values: np.ndarray) -> np.ndarray:
    """The configs (index rows) whose measurement failed."""
    values = np.asarray(values, dtype=float)
    bad = np.flatnonzero(~(np.isfinite(values) & (values > 0)))
    if bad.size == 0:
        return np.zeros((0, len(rows[0]) if len(rows) else 0), dtype=np.int64)
    return np.stack([rows[i] for i in bad]).astype(np.int64)


def successes(rows: Sequence[np.ndarray], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The successfully measured configs (index rows) and their log throughput."""
    values = np.asarray(values, dtype=float)
    ok = np.flatnonzero(np.isfinite(values) & (values > 0))
    if ok.size == 0:
        return np.zeros((0, 0), dtype=np.int64), np.zeros(0)
    return np.stack([rows[i] for i in ok]).astype(np.int64), np.log(values[ok])


def smoothed(space: SearchSpace, centres: np.ndarray, measured: np.ndarray,
             logs: np.ndarray) -> np.ndarray:
    """Per centre: the weighted mean log value of the ``measured`` configs near it.

    A measured config ``s <= SMOOTH_STEPS`` steps away weighs
    ``SMOOTH_DECAY**s``; a centre that is itself measured weighs 1.
    """
    out = np.empty(centres.shape[0])
    for i, c in enumerate(centres):
        s = steps_away(space, c, measured)
        w = np.where(s <= SMOOTH_STEPS, SMOOTH_DECAY ** s.astype(float), 0.0)
        total = float(w.sum())
        out[i] = float(w @ logs) / total if total > 0 else -np.inf
    return out


def pick_centre(
    space: SearchSpace, measured: np.ndarray, logs: np.ndarray, rng: np.random.Generator,
    n: int = CENTRES,
) -> np.ndarray | None:
    """One of the ``n`` best successful measurements by smoothed log value."""
    if logs.size == 0:
        return None
    pool = np.argsort(-logs, kind="stable")[:SMOOTH_POOL]
    score = smoothed(space, measured[pool], measured, logs)
    top = pool[np.argsort(-score, kind="stable")[:n]]
    w = CENTRE_DECAY ** np.arange(top.size)
    return measured[int(top[rng.choice(top.size, p=w / w.sum())])]


def untried_near(
    space: SearchSpace, centre: np.ndarray, tried_ids: set[int], max_radius: int = MAX_RADIUS,
    balls: BallCache | None = None,
) -> np.ndarray:
    """Untried feasible configs 1 to ``max_radius`` parameters away from ``centre``."""
    tried = np.fromiter(tried_ids, dtype=np.int64, count=len(tried_ids))
    near = balls.ball if balls is not None else (lambda c, r: ball(space, c, r))
    cand = np.concatenate([near(centre, r) for r in range(1, max_radius + 1)])
    return cand[~np.isin(space.flat_id(cand), tried)] if cand.shape[0] else cand


def nearest_ring(
    space: SearchSpace, centre: np.ndarray, candidates: np.ndarray, rng: np.random.Generator,
) -> np.ndarray:
    """The candidates ``s`` steps from ``centre``, ``s`` drawn with weight ``RING_DECAY**s``.

    On tiling spaces the way to the optimum is usually a one-step change of one
    or two tiles (one grows as another shrinks along a capacity ridge); among
    the 16-choice tile axes a uniform pick over every neighbour would seldom
    make it, and the step counts let the two-way switches wait their turn too.
    """
    s = steps_away(space, centre, candidates)
    rings = np.unique(s)
    w = RING_DECAY ** rings.astype(float)
    ring = rings[rng.choice(rings.size, p=w / w.sum())]
    return candidates[s == ring]


def local_proposal(
    space: SearchSpace, rows: Sequence[np.ndarray], values: np.ndarray, tried_ids: set[int],
    rng: np.random.Generator, balls: BallCache | None = None,
) -> np.ndarray | None:
    """An untried config a small move from a top config; None when there is none.

    ``rows``/``values``: every measured config and its throughput (nan = failed);
    ``tried_ids``: flat ids of every config proposed so far, in any state;
    ``balls``: a cache of the centres' neighbourhoods (same result, faster).
    """
    measured, logs = successes(rows, values)
    centre = pick_centre(space, measured, logs, rng)
    if centre is None:
        return None
    cand = untried_near(space, centre, tried_ids, balls=balls)
    if cand.shape[0] == 0:
        return None
    ring = nearest_ring(space, centre, cand, rng)
    if logs.size < MIN_MEASURED:
        return ring[int(rng.integers(ring.shape[0]))]
    failed = failures(rows, values)
    if failed.shape[0]:  # as bad as the worst success: the model learns where builds fail
        measured = np.concatenate([measured, failed])
        logs = np.concatenate([logs, np.full(failed.shape[0], logs.min())])
    return thompson_choice(space, centre, measured, logs, ring, rng)
