"""Float (and wide int) parameters of a plain Optuna study as a fixed grid of choices.

Both samplers choose among finite sets of configs (GPUCBSampler maximises its
acquisition over them, ReinforceSampler's policy has one head of choices per
parameter), so a float distribution becomes ``FLOAT_GRID_POINTS`` values
spread over its range: evenly on a linear distribution, geometrically on a
log one, on multiples of ``step`` where it has one (all of them when there
are few enough). Every value the samplers propose, the first random trials
included, is a grid point, so each trial is a config of the grid and the
model sees it; a value put in by hand off the grid (``enqueue_trial``) is
left out of the model.

``int_grid`` does the same for an int distribution with more values than the
grid has points (ReinforceSampler: a policy head over 512 sizes of a log-int
learns slowly and draws them uniformly, not log-uniformly); the grid values
are ints on the distribution's step, geometric on a log one.
"""

from __future__ import annotations

import numpy as np
from optuna.distributions import FloatDistribution, IntDistribution

FLOAT_GRID_POINTS = 33  # a 1/32 of the range apart on a linear distribution


def float_grid(dist: FloatDistribution, points: int = FLOAT_GRID_POINTS) -> tuple[float, ...]:
    """The grid of values that stands for ``dist``: sorted, distinct, within its range."""
    if points < 2:
        raise ValueError(f"float grid points: expected >= 2, got {points}")
    low, high = float(dist.low), float(dist.high)
    if low == high:
        return (low,)
    if dist.step is not None:
        n = int(np.floor((high - low) / dist.step + 1e-9)) + 1
        k = np.unique(np.round(np.linspace(0, n - 1, min(n, points))).astype(np.int64))
        grid = low + k * dist.step
    elif dist.log:
        grid = np.geomspace(low, high, points)
    else:
        grid = np.linspace(low, high, points)
    grid = np.clip(grid, low, high)
    grid[0], grid[-1] = low, grid[-1] if dist.step is not None else high
    return tuple(float(v) for v in np.unique(grid))


def snap(dist: FloatDistribution, value: float, points: int = FLOAT_GRID_POINTS) -> float:
    """The grid point nearest to ``value`` (on a log axis for a log distribution)."""
    grid = np.asarray(float_grid(dist, points))
    if dist.log:
        i = int(np.argmin(np.abs(np.log(grid) - np.log(value))))
    else:
        i = int(np.argmin(np.abs(grid - value)))
    return float(grid[i])


def int_grid(dist: IntDistribution, points: int = FLOAT_GRID_POINTS) -> tuple[int, ...]:
    """Every value of ``dist`` when it has at most ``points``, else a grid of ``points``."""
    if points < 2:
        raise ValueError(f"int grid points: expected >= 2, got {points}")
    n = (dist.high - dist.low) // dist.step + 1
    if n <= points:
        return tuple(range(dist.low, dist.high + 1, dist.step))
    if dist.log:  # log ints have step 1 and low >= 1
        grid = np.geomspace(dist.low, dist.high, points)
    else:
        grid = np.linspace(dist.low, dist.high, points)
    k = np.round((grid - dist.low) / dist.step).astype(np.int64)
    return tuple(int(v) for v in np.unique(dist.low + k * dist.step))


def snap_int(dist: IntDistribution, value: int, points: int = FLOAT_GRID_POINTS) -> int:
    """The value of ``int_grid`` nearest to ``value`` (on a log axis for a log distribution)."""
    grid = np.asarray(int_grid(dist, points), dtype=float)
    if dist.log:
        return int(grid[int(np.argmin(np.abs(np.log(grid) - np.log(value))))])
    return int(grid[int(np.argmin(np.abs(grid - value)))])
