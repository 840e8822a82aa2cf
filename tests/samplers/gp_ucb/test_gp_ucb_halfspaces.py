"""P(success) as an AND of halfspaces: its gradient, and what it learns where a vote cannot."""

from __future__ import annotations

import numpy as np
from scipy.optimize import check_grad

from aoe_optuna.samplers.gp_ucb._feasibility import FeasibilityModel
from aoe_optuna.samplers.gp_ucb._feasibility_halfspaces import (
    FLOOR,
    GATES,
    HalfspaceFeasibility,
    loss_and_grad,
)


def _divisible(x: np.ndarray) -> np.ndarray:
    """A GEMM-like rule in log2 units: threads * vector width must divide the tile,
    and the threads must fit in a block (two halfspaces)."""
    tile, threads, width = x[:, 0] * 3, x[:, 1] * 2, x[:, 2] * 3  # log2 sizes
    return (threads + width <= tile) & (threads + x[:, 3] * 3 <= 4)


def _grid(rng: np.random.Generator, n: int) -> np.ndarray:
    """Configs of power-of-two parameters, encoded as the space does ([0, 1] log2);
    the last one plays no part in the rule. 2,400 configs: most are never seen."""
    levels = (5, 3, 5, 4, 8)
    return np.stack([rng.integers(0, k, n) / (k - 1) for k in levels], axis=1)


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    x = np.hstack([_grid(rng, 40), np.ones((40, 1))])
    ok = _divisible(x[:, :-1]).astype(float)
    theta = rng.normal(0.0, 1.0, x.shape[1] * GATES)
    err = check_grad(lambda t: loss_and_grad(t, x, ok, 1e-3)[0],
                     lambda t: loss_and_grad(t, x, ok, 1e-3)[1], theta)
    assert err < 1e-5 * np.linalg.norm(loss_and_grad(theta, x, ok, 1e-3)[1]) + 1e-7


def test_learns_a_divisibility_rule_a_vote_of_neighbours_cannot() -> None:
    rng = np.random.default_rng(1)
    train, test = _grid(rng, 200), _grid(rng, 2000)
    ok, truth = _divisible(train), _divisible(test)
    halfspaces = HalfspaceFeasibility.fit(train[ok], train[~ok], np.random.default_rng(2))
    vote = FeasibilityModel.fit(train[ok], train[~ok])
    assert halfspaces is not None and vote is not None

    def errors(p: np.ndarray) -> float:
        return float(np.mean((p > 0.5) != truth))

    assert errors(halfspaces.predict(test)) < 0.03
    # the rule splits configs a step apart: the vote, even with a scale per dimension,
    # errs more than twice as often
    assert errors(vote.predict(test)) > 2 * errors(halfspaces.predict(test))


def test_absent_without_failures_floored_and_seeded() -> None:
    rng = np.random.default_rng(3)
    x = _grid(rng, 80)
    ok = _divisible(x)
    assert HalfspaceFeasibility.fit(x, x[:0], rng) is None
    a = HalfspaceFeasibility.fit(x[ok], x[~ok], np.random.default_rng(4))
    b = HalfspaceFeasibility.fit(x[ok], x[~ok], np.random.default_rng(4))
    assert a is not None and b is not None
    p = a.predict(x)
    assert np.array_equal(p, b.predict(x))
    assert p.min() >= FLOOR and p.max() <= 1.0
