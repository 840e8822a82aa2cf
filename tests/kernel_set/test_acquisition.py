"""The acquisition: a config gains for the sets it could improve, a shipped unmeasured pair
is worth checking, measured pairs are never proposed again."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.kernel_set.acquisition import (
    exposure,
    measured_near,
    pick,
    pick_pairs,
    set_gains,
    where_to_measure,
)


def test_a_config_good_over_a_whole_range_gains_for_the_single_kernel_set():
    weight = np.ones(4)
    one_kernel = (np.full(4, 10.0), np.zeros(4, dtype=np.int64))  # one range, 10 s each
    broad = np.log([9.0, 9.0, 9.0, 9.0])  # 1 s better everywhere
    narrow = np.log([5.0, 11.0, 11.0, 11.0])  # 5 s better at one shape, 1 s worse elsewhere
    mean = np.stack([broad, narrow])
    gain = set_gains(mean, np.zeros_like(mean), [one_kernel], weight)
    assert gain == pytest.approx([4.0, 2.0])  # the narrow one: 5 - 3 over the one range
    # with a set of one range per shape, the narrow config gains its 5 s
    per_shape = (np.full(4, 10.0), np.arange(4))
    assert set_gains(mean, np.zeros_like(mean), [per_shape], weight) == pytest.approx([4.0, 5.0])


def test_uncertainty_makes_a_config_optimistic():
    mean = np.log(np.full((1, 2), 11.0))
    sets = [(np.full(2, 10.0), np.zeros(2, dtype=np.int64))]
    assert set_gains(mean, np.zeros((1, 2)), sets, np.ones(2))[0] == 0.0
    assert set_gains(mean, np.full((1, 2), 0.5), sets, np.ones(2))[0] > 0.0


def test_measured_pairs_are_never_proposed():
    mean = np.log(np.array([[1.0, 1.0], [2.0, 2.0]]))
    std = np.full((2, 2), 0.1)
    measured = np.array([[True, True], [True, False]])
    shape = where_to_measure(mean, std, np.full(2, 5.0), np.ones(2), measured)
    assert shape.tolist() == [-1, 1]  # the first is measured everywhere
    picks = pick(np.array([9.0, 1.0]), shape, 2)
    assert [(p.row, p.shape) for p in picks] == [(1, 1)]
    shipped = np.ones((2, 2), dtype=bool)
    up = exposure(mean, std, np.ones(2), shipped, measured)
    assert up[0].tolist() == [0.0, 0.0] and up[1, 1] > 0
    assert [(p.row, p.shape) for p in pick_pairs(up, 3)] == [(1, 1)]


def test_a_pair_next_to_a_measured_one_counts_as_measured_within_the_reach():
    shapes = np.array([16, 24, 64, 256])
    pairs = {(7, 16), (9, 256)}
    exact = measured_near(np.array([7, 9, 3]), shapes, pairs)
    assert exact.tolist() == [[True, False, False, False], [False, False, False, True],
                              [False, False, False, False]]
    # log2(24 / 16) = 0.58: within 0.6 of 16, and 64 is 2 away from both
    near = measured_near(np.array([7, 9, 3]), shapes, pairs, reach=0.6)
    assert near.tolist() == [[True, True, False, False], [False, False, False, True],
                             [False, False, False, False]]
    assert measured_near(np.array([7]), shapes, pairs, reach=2.0)[0].tolist() == [
        True, True, True, False]
