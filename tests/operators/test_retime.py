"""Re-timing: who is raced, in what order, when the race stops, who wins, the interval."""

import math

import pytest

from aoe_optuna.certify.race import RaceRules
from aoe_optuna.operators.retime import (
    Candidate,
    Retimed,
    candidates_to_retime,
    race,
    retime_cost,
)


def c(trial: int, latency: float, spread: float | None = 0.01) -> Candidate:
    return Candidate(trial, {"tile_m": trial}, latency, spread)


def test_candidates_are_the_configs_within_the_noise_band_of_the_best():
    measured = [c(0, 100.0), c(1, 102.0), c(2, 103.0), c(3, 110.0), c(4, 101.0)]
    # band: 1 + 2.5 * sqrt(2) * 0.01 = 1.0354
    assert [x.trial for x in candidates_to_retime(measured)] == [0, 4, 1]
    assert [x.trial for x in candidates_to_retime(measured, max_candidates=5)] == [0, 4, 1, 2]
    assert candidates_to_retime([c(0, 1.0, spread=None), c(1, 1.0, None)]) == []
    assert candidates_to_retime([]) == []


def test_race_interleaves_rounds_drops_failures_and_stops_once_decided():
    calls = []
    truth = {0: 1.10, 1: 1.00, 2: 1.05}

    def time_again(params, draw):
        calls.append((params["tile_m"], draw))
        return None if params["tile_m"] == 2 and draw == 2 else truth[params["tile_m"]]

    rules = RaceRules(epsilon=0.01, min_rounds=2, max_rounds=6)
    out, state, spent = race([c(0, 0.90), c(1, 0.95), c(2, 0.97)], time_again, rules, 30)
    # round 1 in contender order; trial 2 fails in round 2, which is then timed afresh
    # for the two left, rotated; noise-free timings decide at the first look
    assert calls[:5] == [(0, 1), (1, 1), (2, 1), (1, 2), (2, 2)]
    assert [r.trial for r in out] == [1, 0]
    assert state.done and state.leader == 1 and state.slower == [0]
    assert spent == len(calls) and spent < 3 * 6
    assert out[0].latencies_s == (1.0, 1.0) and out[0].first_s == 0.95


def test_race_of_noisy_equals_ends_at_its_budget_with_the_rivals_open():
    import numpy as np

    rng = np.random.default_rng(0)

    def time_again(params, draw):
        return float(np.exp(rng.normal(0.0, 0.05)))  # 5% noise, every config the same

    rules = RaceRules(epsilon=0.01, min_rounds=2, max_rounds=10)
    out, state, spent = race([c(0, 0.9), c(1, 0.91)], time_again, rules, 7)
    assert spent == 6 and not state.done and state.open  # a fourth round would need 8
    assert race([], time_again, rules, 10) == ([], race([], time_again, rules, 10)[1], 0)


def test_interval_from_known_noise_or_from_the_retimings():
    known = Retimed(0, {}, 1.0, (1.0, 1.0, 1.0, 1.0), spread=0.02)
    lo, hi = known.interval_s()
    assert math.log(hi) == pytest.approx(1.959964 * 0.02 / 2, rel=1e-5)
    assert lo * hi == pytest.approx(1.0)
    unknown = Retimed(0, {}, 1.0, (1.0, 1.1, 0.9))
    lo, hi = unknown.interval_s()
    assert lo < unknown.mean_s < hi and hi / lo > 1.3  # t with 2 degrees of freedom is wide
    assert Retimed(0, {}, 2.0, ()).interval_s() == (2.0, 2.0)
    assert Retimed(0, {}, 2.0, (4.0, 1.0)).mean_s == pytest.approx(2.0)


def test_cost_is_one_measurement_per_candidate_and_round():
    assert retime_cost([c(0, 1.0), c(1, 1.0)], rounds=3) == 6
    assert retime_cost([], rounds=3) == 0
