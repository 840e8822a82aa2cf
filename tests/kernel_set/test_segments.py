"""The 1-D segmentation is exact: it equals a brute force over every cover of K ranges."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aoe_optuna.kernel_set.segments import cover_cost, segment, segment_all


def brute_force(cost: np.ndarray, k: int) -> float:
    """The cheapest cover by at most k ranges, every range at its cheapest row."""
    cells = cost.shape[1]
    best = np.inf
    for n in range(1, k + 1):
        for cuts in itertools.combinations(range(1, cells), n - 1):
            bounds = [0, *cuts, cells]
            total = sum(cost[:, a:b].sum(axis=1).min() for a, b in
                        zip(bounds, bounds[1:], strict=False))
            best = min(best, total)
    return float(best)


@pytest.mark.parametrize("seed", range(6))
def test_every_k_matches_the_brute_force(seed):
    rng = np.random.default_rng(seed)
    cost = rng.random((5, 9)) + rng.random((5, 1)) * 2
    for k, seg in enumerate(segment_all(cost, 5), start=1):
        assert seg.total == pytest.approx(brute_force(cost, k))
        assert cover_cost(cost, seg.assignment()) == pytest.approx(seg.total)
        assert len(seg.starts) <= k and seg.starts[0] == 0


def test_a_range_is_served_by_the_row_cheapest_over_it_and_neighbours_differ():
    # row 0 wins cells 0-2, row 1 cells 3-5: two ranges at k = 2, one at k = 1
    cost = np.array([[1, 1, 1, 5, 5, 5], [3, 3, 3, 1, 1, 1.0]])
    one, two, three = segment_all(cost, 3)
    assert one.ranges() == [(0, 5, 1)] and one.total == 12
    assert two.ranges() == [(0, 2, 0), (3, 5, 1)] and two.total == 6
    assert three.ranges() == two.ranges()  # no third range helps: neighbours merged
    assert three.distinct == 2


def test_a_row_that_cannot_run_a_cell_never_serves_it():
    cost = np.array([[1.0, np.inf, 1.0], [2.0, 2.0, 2.0]])
    assert segment(cost, 1).ranges() == [(0, 2, 1)]
    assert segment(cost, 3).total == pytest.approx(4.0)
    with pytest.raises(ValueError, match="no candidate"):
        segment(np.array([[1.0, np.inf]]), 2)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="matrix"):
        segment(np.zeros((0, 3)), 1)
    with pytest.raises(ValueError, match="at least 1"):
        segment(np.ones((2, 3)), 0)
