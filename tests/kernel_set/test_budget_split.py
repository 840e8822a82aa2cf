"""The budget over a mix's operators: a floor each, the rest by the share of the time;
and the time each M is expected to take, which also places the tuning shapes."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.kernel_set.budget_split import next_operator, quotas
from aoe_optuna.kernel_set.expected_time import expected_time_s, model_scale
from aoe_optuna.kernel_set.operator_mix import from_model
from aoe_optuna.kernel_set.tuning_shapes import tuning_shapes
from aoe_optuna.spec.loader import spec_from_dict
from aoe_optuna.workload.shape_mix import range_mix

SPEC = spec_from_dict({
    "op_name": "TinyGemm",
    "search_space": {"tile_m": [16, 32, 64, 128], "tile_n": [128, 256], "tile_k": [64],
                     "pipeline": [2], "l1_prefetch": [1], "output_align": [0, 1]},
    "hardware": {"soc": "Ascend910B2"},
    "workload": {"model": "qwen2.5-7b", "phase": "decode", "batch": 1},
    "backend": {"name": "simulator"}}, source="test")


def test_every_operator_gets_its_floor_and_the_rest_goes_by_time():
    q = quotas([1.0, 1.0, 8.0], 300)
    assert q.sum() == pytest.approx(300)
    assert q.min() >= 0.5 * 300 / 3  # half an even split at least
    assert q[2] == pytest.approx(50 + 150 * 0.8) and q[0] == pytest.approx(50 + 150 * 0.1)
    assert quotas([0.0, 0.0], 10).tolist() == [5.0, 5.0]  # no time known: even


def test_the_next_round_goes_to_the_open_operator_furthest_below_its_quota():
    q = np.array([50.0, 100.0, 150.0])
    assert next_operator([10, 30, 20], q, [True, True, True]) == 2
    assert next_operator([10, 30, 20], q, [True, True, False]) == 0
    assert next_operator([10, 30, 20], q, [False, False, False]) is None


def test_a_decode_spends_more_time_at_large_batches_than_its_bound_says():
    """The roofline bound is nearly flat over a decode's batches (memory bound below
    the ridge); the time of a kernel that hides neither term grows with the batch, and
    the tuning shapes follow it to the large batches."""
    op = from_model(SPEC, range_mix({"batch": {"low": 1, "high": 256, "weighting": "log"}},
                                    "t")).operators[0]
    t = expected_time_s(SPEC, op)
    bound = model_scale(SPEC, op)
    assert np.all(np.diff(t) > 0)
    assert t[-1] / t[0] > 1.5 > bound(256) / bound(1)
    by_time = tuning_shapes(op.m, op.weight, 16, t)
    by_weight = tuning_shapes(op.m, op.weight, 16)
    assert by_time[0] == 1 and by_time[-1] == 256
    assert (by_time > 87).sum() > (by_weight > 87).sum()
