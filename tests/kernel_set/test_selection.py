"""Kernel sets from a latency matrix: contiguous ranges over every M, cells for long mixes."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.kernel_set.acquisition import shape_weights
from aoe_optuna.kernel_set.selection import Cells, choose_sets, dispatch, per_shape_best_s
from aoe_optuna.kernel_set.tuning_shapes import tuning_shapes


def test_sets_cover_every_m_in_order_and_improve_with_k():
    m = np.arange(1, 65)
    weight = 1.0 / m
    # three configs, each fastest on a third of the range
    latency = np.stack([1 + (m > 20) * 0.5, 1.2 - 0.1 * ((m > 20) & (m <= 40)),
                        1.3 - 0.4 * (m > 40)]).astype(float)
    sets = choose_sets(latency, m, weight, 4)
    for s in sets:
        lows = [r.low for r in s.ranges]
        highs = [r.high for r in s.ranges]
        assert lows[0] == 1 and highs[-1] == 64
        assert all(b == a + 1 for a, b in zip(highs, lows[1:], strict=False))
    assert [s.weighted_s for s in sets] == sorted((s.weighted_s for s in sets), reverse=True)
    assert sets[2].weighted_s == pytest.approx(per_shape_best_s(latency, weight))
    assert [(r.low, r.high, r.row) for r in sets[2].ranges] == [(1, 20, 0), (21, 40, 1),
                                                                (41, 64, 2)]
    assert dispatch(sets[2].ranges, np.array([0, 1, 30, 64, 65])).tolist() == [-1, 0, 1, 2, -1]


def test_a_long_mix_is_cut_into_cells_whose_cost_is_every_m():
    m = np.arange(128, 8193)
    cells = Cells.of(m, 512)
    assert len(cells.starts) <= 512 and cells.starts[0] == 0
    values = np.random.default_rng(0).random((3, len(m)))
    assert cells.sums(values).sum() == pytest.approx(values.sum())
    assert cells.bounds(0, len(cells.starts) - 1) == (128, 8192)
    assert Cells.of(np.arange(1, 11), 512).starts.tolist() == list(range(10))


def test_tuning_shapes_hold_the_ends_and_follow_the_weight():
    m = np.arange(1, 257)
    log = tuning_shapes(m, 1.0 / m, 16)
    uniform = tuning_shapes(m, np.ones(len(m)), 16)
    for shapes in (log, uniform):
        assert len(shapes) == 16 and shapes[0] == 1 and shapes[-1] == 256
        assert np.all(np.diff(shapes) > 0)
    assert (log < 32).sum() > (uniform < 32).sum()  # a log mix measures small M more
    assert tuning_shapes(np.array([1, 8, 64]), np.ones(3), 16).tolist() == [1, 8, 64]
    assert tuning_shapes(m, 1.0 / m, 1).tolist() == [int(m[np.searchsorted(
        np.cumsum(1.0 / m) / (1.0 / m).sum(), 0.5)])]


def test_each_tuning_shape_owns_the_weight_of_the_m_nearest_it():
    m = np.array([1, 2, 3, 4, 8, 16])
    w = shape_weights(m, np.ones(6), np.array([1, 4, 16]))
    assert w.tolist() == [2.0, 3.0, 1.0]  # 2 ties between 1 and 4 in log: the smaller
