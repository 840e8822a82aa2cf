"""Early stop of a clearly slower candidate: in the timing loop, the cpu driver, and the
rule that a trial cut short is never reported as best."""

from __future__ import annotations

import time
from pathlib import Path

import optuna
import pytest

from aoe_optuna.backends.cpu.backend import CpuBackend
from aoe_optuna.backends.timing import TimingPolicy, median_interval, time_call
from aoe_optuna.study.create import best_trial
from aoe_optuna.workload.gemm import Gemm

SLEEP_S = 0.002


def nap() -> None:
    time.sleep(SLEEP_S)


def test_a_clearly_slower_candidate_stops_at_the_minimum_repeats() -> None:
    policy = TimingPolicy(warmup=0, min_repeats=4, max_repeats=50, rel_precision=1e-6,
                          max_seconds=5.0, stop_above_s=SLEEP_S / 4)
    result = time_call(nap, policy)
    # 4 on a quiet machine; one nap stretched by a busy one widens the interval a round
    # or two, still far from the 50 a candidate not cut short takes
    assert result.cut_short and result.repeats <= 6, result.repeats
    low, high = median_interval(result.samples)
    assert SLEEP_S / 4 * 1.1 < low <= result.median_s <= high


def test_a_candidate_as_fast_as_the_incumbent_is_timed_in_full() -> None:
    policy = TimingPolicy(warmup=0, min_repeats=4, max_repeats=12, rel_precision=1e-6,
                          max_seconds=5.0, stop_above_s=SLEEP_S * 10)
    result = time_call(nap, policy)
    assert not result.cut_short and result.repeats == 12


@pytest.mark.parametrize("bad", [{"stop_above_s": 0.0}, {"stop_margin": -0.1}])
def test_inconsistent_stop_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="inconsistent timing policy"):
        TimingPolicy(**bad)


CONFIG = {"tile_m": 32, "tile_n": 32, "tile_k": 32, "pipeline": 0, "l1_prefetch": 0,
          "output_align": 0, "opt_level": "O1", "schedule": "default", "unroll_factor": 0,
          "layout": "row_major", "quantization": False, "l1_k": 0, "swizzle_offset": 3,
          "swizzle_direction": 0, "preload": 0, "unit_flag": 0, "split_k": 1,
          "padding": 0, "layout_a": "row_major", "layout_b": "row_major"}


@pytest.mark.slow
def test_the_cpu_driver_cuts_a_slower_config_short(tmp_path: Path) -> None:
    # a precision no timing reaches and a time cap a loaded machine does not hit: the full
    # measurement runs every repeat, so only the early stop can end one at the minimum
    backend = CpuBackend(work_dir=tmp_path, min_repeats=3, max_repeats=20,
                         rel_precision=1e-12, max_seconds=60.0, estimator="median")
    gemm = Gemm(M=128, K=128, N=128, dtype="fp32")
    full = backend.measure(CONFIG, gemm)
    cut = backend.measure(CONFIG, gemm, stop_above_s=full.latency_s / 10)
    assert full.ok and cut.ok and not full.extra["cut_short"] and cut.extra["cut_short"]
    assert cut.extra["repeats"] == 3 < full.extra["repeats"]
    low, _high = cut.extra["interval_s"]
    assert low > full.latency_s / 10 * 1.1
    off = CpuBackend(work_dir=tmp_path, min_repeats=3, early_stop_margin=0, max_seconds=0.05,
                     estimator="median")
    assert not off.measure(CONFIG, gemm, stop_above_s=full.latency_s / 10).extra["cut_short"]


def test_the_minimum_times_its_whole_window_however_slow_the_candidate() -> None:
    # a part of the window moves as much as a short timing does: no cut on it
    policy = TimingPolicy(warmup=0, min_repeats=2, max_repeats=1000, max_seconds=0.05,
                          stop_above_s=SLEEP_S / 4, estimator="min")
    result = time_call(nap, policy)
    assert not result.cut_short and sum(result.samples) >= 0.05
    assert result.estimate_s == min(result.samples)


def test_a_trial_cut_short_is_never_the_best() -> None:
    study = optuna.create_study(direction="maximize")
    x = optuna.distributions.IntDistribution(0, 10)
    for value, attrs in [(5.0, {}), (9.0, {"cut_short": True}), (7.0, {})]:
        study.add_trial(optuna.trial.create_trial(value=value, params={"x": int(value)},
                                                  distributions={"x": x}, user_attrs=attrs))
    best = best_trial(study)
    assert best is not None and best.value == 7.0


def test_early_stop_is_on_only_where_one_gemm_is_the_value(tmp_path: Path) -> None:
    from aoe_optuna.study.run.objective import Evaluator
    from aoe_optuna.workload.gemm import Workload

    one = Workload("one", (Gemm(M=64, K=64, N=64, name="a"),), 1)
    two = Workload("two", (Gemm(M=64, K=64, N=64, name="a"),
                           Gemm(M=64, K=64, N=128, name="b")), 1)
    median = CpuBackend(work_dir=tmp_path, estimator="median")
    assert Evaluator(one, median, None).stops_early
    assert not Evaluator(two, median, None).stops_early
    assert not Evaluator(one, CpuBackend(work_dir=tmp_path, early_stop_margin=0,
                                         estimator="median"), None).stops_early
    # the minimum's window is its measurement: nothing cuts it short
    assert not Evaluator(one, CpuBackend(work_dir=tmp_path), None).stops_early
