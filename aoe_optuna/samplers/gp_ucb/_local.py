"""Local phase (opt-in): once the best config stops improving, measure one move from the best.

A GP with one length scale per parameter learns how much a parameter matters
on average over the configs measured. Where a parameter matters only in part
of the space, the average misleads. On the recorded convolution space a run
that has settled on the shared-memory plateau (1.24-1.26 x the optimum) has
learnt that ``read_only`` hardly matters (length scale 6 on its 0-1 axis) and
that one-row blocks are slow (measured with shared memory). The optimum is a
one-row block without shared memory, where ``read_only`` decides between 1.0
and 1.8 x. Its UCB ranks about 1,500th of 4,362 (seed 1, at 100
measurements), so global UCB never measures it.

It is reachable one parameter at a time across the plateau: ``read_only``
off ties, shared memory off then gives 1.15, one-row blocks then 1.00. So
once the incumbent has not improved for ``LOCAL_PATIENCE`` measurements,
every other suggestion maximises the same acquisition (UCB weighted by
P(success)) over only the unseen configs ``LOCAL_RADIUS`` move from one of
the best measured configs and likely to run (``LOCAL_MIN_SUCCESS``). A move
is another value of one parameter, or one grid step of a float (a float's
far end has the largest std and would otherwise win every local step). It
is a coordinate search around the plateau, ranked by the model: a discrete
trust region in the spirit of TuRBO (Eriksson et al., NeurIPS 2019) and
CASMOPOLITAN (Wan et al., ICML 2021), which uses Hamming distance on
categorical spaces. Centring on several of the best, not only the best,
lets it cross ties and noise. The other suggestions stay global, so a better
basin elsewhere can still be found. Where the local steps keep failing
(``LOCAL_FAILURE_MARGIN``), the phase stops for good.

It is not the default: on the recorded GEMM spaces the measurements it
spends around a basin 6-11% from the optimum are the ones global UCB finds
the optimum with (20 seeds at 100: mean 1.023 against 1.007 on the RTX 2080
Ti), while on the convolution space it gains 1.068 to 1.059.
(docs/decisions/0020-gp-ucb-coordinate-search-when-stalled.md)
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.space.search_space import SearchSpace

LOCAL_PATIENCE = 5  # the patience measured (GPUCBSampler(search={"local_patience": ...}))
LOCAL_RADIUS = 1  # moves (see near_any) from a centre
# A local step never goes where the failure model expects a failure: next to a config
# that built there may be a region that does not (every odd tile, every too-large one),
# and the global steps already weigh such configs by their gain.
LOCAL_MIN_SUCCESS = 0.5
# Where the constraints are unknown (a plain study), the configs one move from a good
# one can fail as a rule (every odd tile size), and a smoothed P(success) cannot see
# it. The phase stops once its own steps have failed this many times more often than
# they ran.
LOCAL_FAILURE_MARGIN = 2


def stalled_for(targets: np.ndarray) -> int:
    """Measurements since the best one (``targets`` in trial order, larger is better)."""
    if targets.size == 0:
        return 0
    return int(targets.size - 1 - int(np.argmax(targets)))


def near_any(
    space: SearchSpace, rows: np.ndarray, centres: np.ndarray, radius: int
) -> np.ndarray:
    """Mask of ``rows`` at most ``radius`` moves from at least one of ``centres``.

    A move is another value of one parameter (any other tile size, flag or
    category: the choices of a tuning parameter are distinct configs), except
    along a float's grid, where each grid step is a move: a float grid stands
    for a continuum, and its far end is not near.
    """
    real = np.array([p.kind == "real" for p in space.params])
    mask = np.zeros(rows.shape[0], dtype=bool)
    for center in centres:
        delta = np.abs(rows - center[None, :])
        moves = np.where(real[None, :], delta, delta > 0).sum(axis=1)
        mask |= moves <= radius
    return mask


def local_steps_pay(n_ran: int, n_failed: int) -> bool:
    """False once the local steps so far failed ``LOCAL_FAILURE_MARGIN`` more times than ran."""
    return n_failed < n_ran + LOCAL_FAILURE_MARGIN


def is_local_step(targets: np.ndarray, patience: int | None) -> bool:
    """Local on every other suggestion once the best is ``patience`` measurements old."""
    if patience is None:
        return False
    return stalled_for(targets) >= patience and targets.size % 2 == 0
