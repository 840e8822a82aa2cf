"""The timing's estimator: the median of a timing known to its precision, or the
fastest call of a fixed window, which reaches past a burst of interference."""

from __future__ import annotations

import time

import pytest

from aoe_optuna.backends.timing import TimingPolicy, summarize, time_call

FAST_S, SLOW_S = 0.002, 0.006


class Burst:
    """A call slowed 3x for its first ``calls``: a shared host's other tenant, busy for a
    while, as the timings on this project's VM showed them (tens of ms to seconds)."""

    def __init__(self, calls: int) -> None:
        self.left = calls

    def __call__(self) -> None:
        time.sleep(SLOW_S if self.left > 0 else FAST_S)
        self.left -= 1


def test_summarize_reports_the_policy_estimator() -> None:
    samples = [0.5, 0.1, 0.3, 0.2, 0.4]
    assert summarize(samples).estimate_s == 0.3 == summarize(samples).median_s
    low = summarize(samples, estimator="min")
    assert low.estimate_s == 0.1 and low.median_s == 0.3


def test_a_burst_longer_than_the_timing_sets_the_median_but_not_the_minimum() -> None:
    # the median stops as soon as the bursts' consistent calls look precise; the minimum
    # times its whole window and finds the calls after the burst
    median = time_call(Burst(10), TimingPolicy(warmup=0, min_repeats=3, max_repeats=200,
                                               rel_precision=0.5, max_seconds=0.15))
    minimum = time_call(Burst(10), TimingPolicy(warmup=0, min_repeats=3, max_repeats=200,
                                                rel_precision=0.5, max_seconds=0.15,
                                                estimator="min"))
    assert median.estimate_s >= SLOW_S and median.repeats < 10
    assert FAST_S <= minimum.estimate_s < SLOW_S and minimum.repeats > 10
    assert sum(minimum.samples) >= 0.15


def test_the_minimum_stops_at_max_repeats_too() -> None:
    result = time_call(Burst(0), TimingPolicy(warmup=0, min_repeats=2, max_repeats=7,
                                              max_seconds=5.0, estimator="min"))
    assert result.repeats == 7


def test_an_unknown_estimator_is_refused() -> None:
    with pytest.raises(ValueError, match="estimator: expected one of"):
        TimingPolicy(estimator="mean")
