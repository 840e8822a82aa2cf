"""A race in rounds of pairs: its fit over incomplete rounds and its replay."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aoe_optuna.certify.blocks import block_fit, residual_sigma
from aoe_optuna.certify.race import RaceRules, next_timings, race_state, winner_of

PAIRS = RaceRules(epsilon=0.01, max_rounds=10, pairs=True)


def run(true: dict[int, float], sigma: float, drift: float, rules: RaceRules, budget: int,
        seed: int, floor: float | None = None) -> tuple[dict[int, list[float]], int]:
    """A race as the study drives it: what next_timings asks, a drift shared per round."""
    rng = np.random.default_rng(seed)
    h: dict[int, list[float]] = {c: [] for c in true}
    spent = 0
    while True:
        st = race_state(h, rules, floor=floor)
        todo = next_timings(st, h)
        if st.done or not todo or spent + len(todo) > budget:
            return h, spent
        d = rng.normal(0, drift)
        for c in todo:
            h[c].append(true[c] * math.exp(d + rng.normal(0, sigma)))
            spent += 1


def table(y: np.ndarray) -> tuple[list[int], list[int], list[float]]:
    k, n = y.shape
    return ([c for c in range(k) for _ in range(n)], [r for _ in range(k) for r in range(n)],
            list(y.ravel()))


def test_complete_rounds_fit_as_own_means_and_the_blocks_noise():
    rng = np.random.default_rng(0)
    y = rng.normal(0, 0.01, (4, 5)) + rng.normal(0, 0.3, 5)  # strong drift per round
    fit = block_fit(4, *table(y))
    assert fit.mu == pytest.approx(y.mean(axis=1))
    assert (fit.sigma, fit.df) == pytest.approx(residual_sigma(y))
    assert fit.diff_se(0, 1, 1.0) == pytest.approx(math.sqrt(2 / 5))
    assert fit.gamma > 100  # the rounds' spread is far above a timing's


def test_pairs_in_rounds_of_their_own_compare_within_rounds_only_when_rounds_drift():
    # rounds 0-1: all three; rounds 2-5: the leader 0 with 1; rounds 6-9: 0 with 2
    cands, rounds = [0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 1]
    for r in range(2, 10):
        cands += [0, 1 if r < 6 else 2]
        rounds += [r, r]
    rng = np.random.default_rng(1)
    true = np.array([0.0, 0.004, 0.006])
    quiet = [true[c] + rng.normal(0, 0.005) for c in cands]
    drifting = [v + d for v, d in zip(quiet, rng.normal(0, 0.2, 10)[rounds], strict=True)]
    calm, rough = block_fit(3, cands, rounds, quiet), block_fit(3, cands, rounds, drifting)
    # without drift, 1 and 2 (never timed in a round together after round 1) compare
    # through every timing; with it, only through their rounds beside the leader
    assert calm.gamma < 1 < rough.gamma
    # (6 timings each: 1/6 + 1/6; within rounds, through the leader: 2/8 + 2/8 less
    # what rounds 0-1 tie directly)
    assert calm.diff_se(1, 2, 1.0) == pytest.approx(math.sqrt(2 / 6))
    assert rough.diff_se(1, 2, 1.0) == pytest.approx(math.sqrt(0.5), rel=1e-3)
    # the drift is taken out: the differences are those of the quiet timings
    assert rough.mu[1] - rough.mu[0] == pytest.approx(
        block_fit(3, cands, rounds, quiet).mu[1] - calm.mu[0], abs=0.004)


def test_two_rounds_of_all_then_the_leader_and_its_most_ambiguous_rival():
    h, spent = run({0: 1.0, 1: 1.004, 2: 1.03, 3: 1.05}, 0.004, 0.02, PAIRS, 20, seed=2,
                   floor=0.004)
    st = race_state(h, PAIRS, floor=0.004)
    assert all(len(h[c]) >= 2 for c in h) and spent <= 20
    # the far two are out early (slower, or passed over); the close pair takes the rest
    assert len(h[0]) + len(h[1]) >= 14 and len(h[2]) + len(h[3]) <= 6
    assert winner_of(st, h) in (0, 1) and st.leader in (0, 1)


def test_drift_of_two_percent_cancels_in_pairs():
    h, _ = run({0: 1.0, 1: 1.05, 2: 1.1}, 0.002, 0.02, PAIRS, 30, seed=3)
    st = race_state(h, PAIRS)
    assert st.done and st.leader == 0 and set(st.slower) == {1, 2}


def test_false_separations_stay_under_the_family_error_when_equal_configs_race():
    rules = RaceRules(epsilon=0.0, confidence=0.9, max_rounds=8, pairs=True)
    wrong = 0
    for seed in range(200):
        h, _ = run({0: 1.0, 1: 1.0, 2: 1.0}, 0.01, 0.01, rules, 24, seed)
        wrong += bool(race_state(h, rules).slower)
    assert wrong / 200 <= 0.1


def test_the_state_replays_from_the_history_so_a_race_resumes_mid_round():
    h, _ = run({0: 1.0, 1: 1.004, 2: 1.008}, 0.004, 0.0, PAIRS, 12, seed=4, floor=0.004)
    st = race_state(h, PAIRS, floor=0.004)
    todo = next_timings(st, h)
    assert len(todo) == 2 and st.leader in todo
    h[todo[0]].append(1.0)  # half the next round taken, then the process died
    again = race_state(h, PAIRS, floor=0.004)
    assert next_timings(again, h) == todo[1:] and again.next_round == st.next_round


def test_a_failed_candidate_leaves_at_its_round_and_a_late_one_joins_at_its_own():
    h = {0: [1.0, 1.0], 1: [1.01, 1.01], 2: [1.0]}
    st = race_state(h, PAIRS, floor=0.004, failed=[2])  # 2 failed in round 1
    assert 2 not in st.active and st.next_round == 2 and next_timings(st, h) == [0, 1]
    h = {0: [1.0, 1.0, 1.0], 1: [1.02, 1.02, 1.02], 2: []}
    st = race_state(h, PAIRS, floor=0.004, joined={2: 3})  # joins at round 3
    assert st.next_round == 3 and sorted(next_timings(st, h)) == [0, 2]
    assert 2 not in st.verdicts


def test_a_lone_candidate_is_timed_min_rounds_and_none_is_no_race():
    st = race_state({0: [1.0]}, PAIRS)
    assert not st.done and next_timings(st, {0: [1.0]}) == [0]
    assert race_state({0: [1.0, 1.1]}, PAIRS).done
    assert race_state({}, PAIRS).leader is None


def test_a_race_read_mid_round_names_a_winner_at_every_re_timing():
    """Another worker may read the stored race after any re-timing, before the first
    round is complete or after the leader's re-timing failed; each read names one."""
    h: dict[int, list[float]] = {0: [], 1: [], 2: []}
    for c, cost in [(0, 1.0), (1, 1.01), (2, 1.02), (0, 1.0), (1, 1.01)]:
        h[c].append(cost)
        st = race_state(h, PAIRS, floor=0.004)
        assert winner_of(st, h) in h
    h = {0: [1.0, 1.0], 1: [1.01, 1.01], 2: [1.02, 1.02]}
    st = race_state(h, PAIRS, floor=0.004, failed=[0])  # the leader failed in round 2
    assert winner_of(st, h) == 1
