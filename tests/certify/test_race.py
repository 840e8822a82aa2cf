"""The race's statistics: looks, verdicts, stopping, intervals and P(correct selection)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aoe_optuna.certify.blocks import residual_sigma, round_adjusted_means
from aoe_optuna.certify.contenders import band, contenders
from aoe_optuna.certify.race import (
    RaceRules,
    RaceState,
    Verdict,
    next_timings,
    race_state,
    winner_interval,
    winner_of,
)


def simulate(true: dict[int, float], sigma: float, drift: float, rules: RaceRules,
             budget: int, seed: int) -> tuple[dict[int, list[float]], int]:
    """A race as a driver runs it: rounds of next_timings, a shared drift per round."""
    rng = np.random.default_rng(seed)
    h: dict[int, list[float]] = {c: [] for c in true}
    spent = 0
    while True:
        st = race_state(h, rules)
        todo = next_timings(st, h)
        if st.done or not todo or spent + len(todo) > budget:
            return h, spent
        d = rng.normal(0, drift)
        for c in todo:
            h[c].append(true[c] * math.exp(d + rng.normal(0, sigma)))
            spent += 1


def test_round_drift_cancels_in_the_blocks_noise():
    rng = np.random.default_rng(0)
    y = np.log([[1.0, 1.0, 1.0], [1.1, 1.1, 1.1]]) + rng.normal(0, 0.5, 3)  # drift only
    sigma, df = residual_sigma(y)
    assert sigma == pytest.approx(0.0, abs=1e-12) and df == 2
    assert residual_sigma(y[:1])[1] == 0


def test_a_clear_winner_is_separated_a_near_one_ties_and_the_race_stops_early():
    rules = RaceRules(epsilon=0.01, max_rounds=10)
    h, spent = simulate({0: 1.0, 1: 1.002, 2: 1.05}, 0.002, 0.02, rules, 40, seed=1)
    st = race_state(h, rules)
    assert st.done and st.leader in (0, 1) and st.reason == "every rival decided"
    assert st.slower == [2] and len(st.tied) == 1
    assert (len(h[2]), st.rounds, spent) == (2, 3, 8) and st.pcs(rules) > 0.95
    assert st.leader not in st.verdicts


def test_undecided_rivals_stay_open_until_the_budget_ends_the_race():
    rules = RaceRules(epsilon=0.01, max_rounds=10)
    h, spent = simulate({0: 1.0, 1: 1.01}, 0.03, 0.0, rules, 8, seed=2)
    st = race_state(h, rules)
    assert not st.done and st.open == [1 - st.leader] and spent == 8
    assert next_timings(st, h) == [0, 1]  # round 5, rotated back to the first
    assert 0 < st.pcs(rules) < 1


def test_a_round_cut_short_is_finished_first_in_its_order():
    rules = RaceRules(max_rounds=10)
    h = {0: [1.0, 1.0], 1: [1.2, 1.2], 2: [1.1]}  # round 2 of contender 2 is missing
    assert next_timings(race_state(h, rules), h) == [2]
    h[2].append(1.1)
    st = race_state(h, rules)
    assert st.slower == [1, 2] and st.done and st.leader == 0  # noise-free blocks decide


def test_failed_contenders_leave_and_a_lone_winner_is_timed_min_rounds():
    rules = RaceRules(min_rounds=2, max_rounds=5)
    st = race_state({0: [1.0], 1: [0.5]}, rules, failed=[1])
    assert st.leader == 0 and not st.done and next_timings(st, {0: [1.0], 1: [0.5]}) == [0]
    assert race_state({0: [1.0, 1.1]}, rules).done
    assert race_state({}, rules).leader is None


def test_confidence_is_split_over_rivals_and_looks():
    rules = RaceRules(confidence=0.95, min_rounds=2, max_rounds=11)
    assert rules.looks == 10 and rules.test_alpha(4) == pytest.approx(0.05 / 40)


def test_false_separations_stay_under_the_family_error_when_equal_configs_race():
    rules = RaceRules(epsilon=0.0, confidence=0.9, max_rounds=8)
    wrong = 0
    for seed in range(200):
        h, _ = simulate({0: 1.0, 1: 1.0, 2: 1.0}, 0.01, 0.01, rules, 24, seed)
        wrong += bool(race_state(h, rules).slower)
    assert wrong / 200 <= 0.1


def test_winner_interval_pools_the_other_contenders_spread_and_keeps_a_floor():
    mean, lo, hi = winner_interval([1.0, 1.02], others=[[2.0, 2.04], [3.0, 3.06]])
    assert lo < mean < hi and mean == pytest.approx(math.sqrt(1.02))
    point = winner_interval([1.0])
    assert point[0] == point[1] == point[2] == 1.0
    m, lo, hi = winner_interval([1.0], floor=0.01)
    assert math.log(hi / m) == pytest.approx(1.959964 * 0.01, rel=1e-5)


def test_contenders_lie_within_the_noise_band_plus_epsilon():
    assert band(0.0, 0.01) == pytest.approx(1.01)
    costs = [1.0, 1.02, float("nan"), 1.005, 1.3, 1.011]
    assert contenders(costs, 0.001, 0.01) == [0, 3, 5]
    assert contenders(costs, 0.001, 0.01, max_contenders=2) == [0, 3]
    assert contenders(costs, None, 0.01) == [0]
    assert contenders([float("inf")], 0.01, 0.01) == []


def test_round_adjusted_means_take_a_slow_spell_out_of_those_who_raced_through_it():
    # rounds 2-3 ran 50% slow; candidate 2 left the race before them
    y = [np.log([1.0, 1.0, 1.5, 1.5]), np.log([1.1, 1.1, 1.65, 1.65]), np.log([1.05, 1.05])]
    mu = round_adjusted_means(y)
    assert np.exp(mu - mu[0]) == pytest.approx([1.0, 1.1, 1.05])  # own means: 1, 1.1, 0.86
    complete = [np.log([1.0, 1.2]), np.log([2.0, 2.2])]
    assert round_adjusted_means(complete) == pytest.approx([c.mean() for c in complete])


def test_rivals_unlikely_to_be_faster_are_parked_and_the_close_pair_races_on():
    true = {0: 1.0, 1: 1.002, 2: 1.03, 3: 1.035, 4: 1.04}
    rounds = {}
    for park in (0.0, 0.05):
        rules = RaceRules(epsilon=0.001, max_rounds=12, park=park)
        h, spent = simulate(true, 0.01, 0.0, rules, 24, seed=3)
        st = race_state(h, rules)
        rounds[park] = min(len(h[0]), len(h[1]))
        assert spent <= 24 and st.leader in (0, 1)
    # without parking the far three are timed until they are found slower (3-4 rounds);
    # parked at the first look (open, not separated), they leave their rounds to the pair
    assert [len(h[c]) for c in (2, 3, 4)] == [2, 2, 2] and rounds[0.05] > rounds[0.0]
    assert set(st.parked) == {2, 3, 4}
    assert not set(st.parked) & set(st.slower) and set(st.parked) <= set(st.open)


def test_the_last_open_rival_is_never_parked():
    rules = RaceRules(epsilon=0.0, max_rounds=10, park=0.45)
    st = race_state({0: [1.0, 1.0], 1: [1.02, 1.021]}, rules, floor=0.01)
    assert st.open == [1] and not st.parked and not st.done


def test_the_winner_is_the_survivors_best_adjusted_mean_not_the_last_leader():
    tied = Verdict(rival=1, leader=0, rounds=2, diff=0.0, se=0.001, df=4, low=-0.003,
                   high=0.003, outcome="tied")
    slower = Verdict(rival=2, leader=0, rounds=2, diff=0.1, se=0.001, df=4, low=0.09,
                     high=0.11, outcome="slower")
    st = RaceState(leader=0, active=(0,), verdicts={1: tied, 2: slower}, rounds=4, done=True,
                   reason="every rival decided")
    history = {0: [1.0, 1.02, 1.02, 1.02], 1: [1.0, 1.0], 2: [0.5, 0.5]}
    assert winner_of(st, history) == 1  # 1.0 against 1.02 over the rounds both ran
    history[1] = [1.0, 1.03]
    assert winner_of(st, history) == 0
