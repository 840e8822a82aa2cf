"""Each trial keeps the repeats its latency came from, with their mean and standard error."""

from __future__ import annotations

import math

import optuna
import pytest
from race_fixture import race_spec

from aoe_optuna.attrs import ATTR_REPEATS_US, ATTR_TIMING_US
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.objective import (
    MeasurementFailed,
    TuningObjective,
    step_rel_se,
    timing_summary_us,
)


def test_a_trial_stores_its_repeats_mean_and_standard_error(tmp_path):
    spec = load_spec(race_spec(tmp_path))
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({"a": 1, "b": 1})
    study.optimize(TuningObjective.from_spec(spec), n_trials=1, catch=(MeasurementFailed,))
    attrs = study.trials[0].user_attrs
    [(gemm, repeats)] = attrs[ATTR_REPEATS_US].items()
    assert len(repeats) == 16
    timing = attrs[ATTR_TIMING_US][gemm]
    assert timing["n"] == 16 and timing["mean"] == pytest.approx(sum(repeats) / 16, rel=1e-6)
    assert 0 < timing["se"] < timing["mean"] * 0.02
    assert attrs["latency_us"][gemm] == pytest.approx(timing["mean"], rel=1e-6)


def test_the_step_standard_error_adds_each_gemms_variance_by_its_calls():
    one = timing_summary_us([1.0, 3.0])
    assert (one["n"], one["mean"], one["se"]) == (2, 2e6, 1e6)
    rel = step_rel_se({"a": [1.0, 3.0], "b": [2.0, 2.0]}, {"a": 2, "b": 1})
    assert rel == pytest.approx(math.sqrt((2 * 1e6) ** 2) / (2 * 2e6 + 2e6))
    assert step_rel_se({"a": [1.0]}, {"a": 1}) is None
