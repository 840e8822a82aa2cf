"""Local proposals: neighbourhoods against brute force, smoothed centres, step rings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest

import aoe_optuna.samplers.reinforce._local as local_module
from aoe_optuna.samplers.neighbourhood import BallCache, ball, neighbours, steps_away
from aoe_optuna.samplers.reinforce import ReinforceSampler
from aoe_optuna.samplers.reinforce._local import (
    RING_DECAY,
    local_proposal,
    nearest_ring,
    pick_centre,
    smoothed,
    successes,
    untried_near,
)
from aoe_optuna.samplers.reinforce._local_model import (
    design,
    onehot,
    posterior,
    size_params,
    size_terms,
    thompson_choice,
)
from aoe_optuna.samplers.reinforce.sampler import LOCAL_START_UNTRAINED
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.loader import load_spec
from tests.samplers.reinforce.test_reinforce import SMALL_BATCH, rows_of, run
from tests.samplers.reinforce.test_reinforce_masking import brute, small_space

STUDIES = Path(__file__).resolve().parents[3] / "studies"


def test_ball_is_every_feasible_config_at_that_distance() -> None:
    space = small_space()
    every = brute(space)
    centre = every[len(every) // 2]
    dist = (every != centre[None, :]).sum(axis=1)
    for radius in (1, 2, 3):
        got = ball(space, centre, radius)
        assert space.is_feasible(got).all()
        want = every[dist == radius]
        assert sorted(space.flat_id(got).tolist()) == sorted(space.flat_id(want).tolist())
    assert sorted(space.flat_id(neighbours(space, centre[None, :])).tolist()) == sorted(
        space.flat_id(every[dist == 1]).tolist()
    )


def test_ball_cache_returns_the_same_balls_and_keeps_only_the_recent_ones() -> None:
    space = small_space()
    every = brute(space)
    cache = BallCache(space, size=2)
    a, b, c = every[10], every[200], every[300]
    first = cache.ball(a, 2)
    np.testing.assert_array_equal(first, ball(space, a, 2))
    assert cache.ball(a, 2) is first  # a hit, not a recomputation
    assert not first.flags.writeable  # shared between calls: nobody may edit it
    np.testing.assert_array_equal(cache.ball(a, 1), ball(space, a, 1))  # radius is in the key
    cache.ball(b, 1)  # third entry: (a, 2), the least recently used, is dropped
    assert cache.ball(a, 2) is not first
    np.testing.assert_array_equal(cache.ball(c, 2), ball(space, c, 2))
    got = untried_near(space, a, set(), balls=cache)
    np.testing.assert_array_equal(got, untried_near(space, a, set()))
    got[:] = 0  # the caller's copy, not the cache's
    np.testing.assert_array_equal(cache.ball(a, 1), ball(space, a, 1))


def test_untried_near_is_both_rings_less_what_was_tried() -> None:
    space = small_space()
    centre = brute(space)[100]
    ring1, ring2 = ball(space, centre, 1), ball(space, centre, 2)
    got = untried_near(space, centre, set())
    want = np.concatenate([ring1, ring2])
    assert sorted(space.flat_id(got).tolist()) == sorted(space.flat_id(want).tolist())
    used = {int(i) for i in space.flat_id(ring1)}
    got = untried_near(space, centre, used)
    assert sorted(space.flat_id(got).tolist()) == sorted(space.flat_id(ring2).tolist())
    assert untried_near(space, centre, used, max_radius=1).shape[0] == 0


def test_steps_count_index_moves_and_any_categorical_change_as_one() -> None:
    space = load_spec(STUDIES / "qwen25_7b_decode_910b2_compile.json").space
    names = list(space.names)
    centre = np.zeros(len(names), dtype=np.int64)
    far = centre.copy()
    far[names.index("tile_m")] = 3  # three choices up an ordered axis: 3 steps
    far[names.index("schedule")] = 3  # any change of a categorical: 1 step
    far[names.index("l1_prefetch")] = 1  # a switch: 1 step
    assert space.params[names.index("schedule")].kind == "categorical"
    assert steps_away(space, centre, far[None, :]).tolist() == [5]


def test_nearest_ring_favours_short_moves_in_proportion() -> None:
    space = small_space()
    centre = brute(space)[100]
    cand = untried_near(space, centre, set())
    s = steps_away(space, centre, cand)
    rng = np.random.default_rng(0)
    picked = [int(steps_away(space, centre, nearest_ring(space, centre, cand, rng)[:1])[0])
              for _ in range(3000)]
    rings = np.unique(s)
    w = RING_DECAY ** rings.astype(float)
    expect = w / w.sum()
    share = np.array([picked.count(int(r)) for r in rings]) / len(picked)
    np.testing.assert_allclose(share, expect, atol=0.03)
    for _ in range(20):  # a ring is every candidate at that step count, nothing else
        ring = nearest_ring(space, centre, cand, rng)
        k = steps_away(space, centre, ring)
        assert (k == k[0]).all() and ring.shape[0] == int((s == k[0]).sum())


def test_smoothing_prefers_a_good_region_to_a_lucky_outlier() -> None:
    space = small_space()
    every = brute(space)
    lucky = every[0]
    region = every[np.argsort(steps_away(space, every[-1], every))[:6]]  # a centre + neighbours
    rows = np.concatenate([lucky[None, :], region,
                           every[np.argsort(steps_away(space, lucky, every))[1:6]]])
    logs = np.concatenate([[1.02], np.full(6, 1.0), np.full(5, 0.5)])  # lucky's ring is bad
    score = smoothed(space, rows[:7], rows, logs)
    assert np.argmax(logs[:7]) == 0 and np.argmax(score) != 0
    rng = np.random.default_rng(1)
    picks = {tuple(pick_centre(space, rows, logs, rng)) for _ in range(50)}
    assert tuple(lucky) not in picks


def test_centre_skips_failures_and_needs_a_measurement() -> None:
    space = small_space()
    rows = list(brute(space)[:5])
    values = np.array([np.nan, 2.0, np.nan, 1.0, np.nan])
    measured, logs = successes(rows, values)
    np.testing.assert_array_equal(measured, np.stack([rows[1], rows[3]]))
    np.testing.assert_allclose(logs, np.log([2.0, 1.0]))
    rng = np.random.default_rng(0)
    got = {tuple(pick_centre(space, measured, logs, rng)) for _ in range(50)}
    assert got == {tuple(rows[1]), tuple(rows[3])}
    none, no_logs = successes(rows, np.full(5, np.nan))
    assert pick_centre(space, none, no_logs, rng) is None
    assert local_proposal(space, rows, np.full(5, np.nan), set(), rng) is None
    assert local_proposal(space, [], np.zeros(0), set(), rng) is None


def test_an_all_local_sampler_moves_one_or_two_parameters_from_its_centre(monkeypatch) -> None:
    space = small_space()
    centres: list[np.ndarray] = []
    real = local_module.pick_centre

    def recording(*args, **kwargs):
        centre = real(*args, **kwargs)
        centres.append(centre)
        return centre

    monkeypatch.setattr(local_module, "pick_centre", recording)
    sampler = ReinforceSampler(space=space, seed=2, learner=SMALL_BATCH, local=1.0)
    study = run(space, sampler, 40, fail_every=6)
    rows = rows_of(space, study)
    assert space.is_feasible(rows).all()
    assert len(set(space.flat_id(rows).tolist())) == 40
    start = LOCAL_START_UNTRAINED
    assert len(centres) == 40 - start  # every proposal once `start` trials were measured
    failed = {t.number for t in study.trials if t.state == optuna.trial.TrialState.FAIL}
    for n, centre in zip(range(start, 40), centres, strict=True):
        changed = int((rows[n] != centre).sum())
        assert 1 <= changed <= 2, (n, changed)
        assert not any((rows[f] == centre).all() for f in failed)  # never a failed centre


def test_untrained_local_moves_wait_for_the_policys_first_draws() -> None:
    space = small_space()
    kw = {"space": space, "seed": 3, "learner": SMALL_BATCH}
    moves = rows_of(space, run(space, ReinforceSampler(**kw, local=0.8), 30))
    plain = rows_of(space, run(space, ReinforceSampler(**kw, local=0), 30))
    start = LOCAL_START_UNTRAINED
    np.testing.assert_array_equal(moves[:start], plain[:start])  # policy draws, same rng
    assert not np.array_equal(moves[start:], plain[start:])  # then the moves begin


def test_failed_builds_teach_the_model_to_move_away_from_them() -> None:
    space = small_space()
    every = brute(space)
    pipe = space.names.index("pipeline")
    centre = every[(every[:, pipe] == 1)][40]
    near = np.concatenate([ball(space, centre, 1), ball(space, centre, 2)])
    # a flat landscape around the centre, and every double-buffered config measured fails
    ok = near[near[:, pipe] != 2][:20]
    bad = near[near[:, pipe] == 2][:10]
    rows = [centre, *ok, *bad]
    values = np.concatenate([[1.01], np.ones(len(ok)), np.full(len(bad), np.nan)])
    tried = {int(i) for i in space.flat_id(np.stack(rows))}

    def share_double_buffered(rows: list[np.ndarray], vals: np.ndarray) -> float:
        picks = [local_proposal(space, rows, vals, tried, np.random.default_rng(s))
                 for s in range(300)]
        return float(np.mean([p[pipe] == 2 for p in picks]))

    taught = share_double_buffered(rows, values)
    # the failed configs only known as tried (how the moves treated failures before)
    untaught = share_double_buffered(rows[: 1 + len(ok)], values[: 1 + len(ok)])
    assert untaught > 0.1  # measured here: 0.20 without the failures, 0.07 with them
    assert taught < untaught / 2, (taught, untaught)



@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), True, "0.5"])
def test_local_share_must_be_a_share(bad) -> None:
    with pytest.raises(ValueError, match="local"):
        ReinforceSampler(space=small_space(), local=bad)


def test_local_moves_are_on_by_default_with_or_without_a_policy() -> None:
    space = load_spec(STUDIES / "qwen25_7b_decode_910b2.json").space
    policy = str(STUDIES / "policies" / "qwen_holdout_seed.safetensors")
    assert ReinforceSampler(space=space)._local_share == 0.8
    assert ReinforceSampler(space=space, policy=policy)._local_share == 0.8
    assert ReinforceSampler(space=space, local=0)._local_share == 0.0
    assert ReinforceSampler(space=space, policy=policy, local=0)._local_share == 0.0


def test_local_proposal_on_a_space_too_large_to_enumerate() -> None:
    space = load_spec(STUDIES / "qwen25_7b_decode_910b2_compile.json").space
    assert space.n_feasible > 3_000_000  # local moves never enumerate it
    rng = np.random.default_rng(0)
    rows = space.sample_feasible(12, rng)
    values = rng.uniform(50, 90, 12)
    tried = {int(i) for i in space.flat_id(rows)}
    for _ in range(5):
        row = local_proposal(space, list(rows), values, tried, rng)
        assert row is not None and space.is_feasible(row[None, :])[0]
        assert int(space.flat_id(row[None, :])[0]) not in tried
        assert (row[None, :] != rows).sum(axis=1).min() <= 2


def test_onehot_sets_exactly_each_parameters_choice_column() -> None:
    space = small_space()
    rows = brute(space)[::97]
    x = onehot(space, rows)
    assert x.shape == (rows.shape[0], sum(space.shape) + 1)
    offsets = np.concatenate([[0], np.cumsum(space.shape)[:-1]])
    want = np.zeros_like(x)
    want[:, -1] = 1
    for i, row in enumerate(rows):
        want[i, offsets + row] = 1
    np.testing.assert_array_equal(x, want)


def test_the_model_learns_additive_effects_and_its_draw_picks_by_them() -> None:
    space = small_space()
    every = brute(space)
    rng = np.random.default_rng(3)
    effect = [rng.normal(0, 0.2, k) for k in space.shape]
    truth = sum(effect[j][every[:, j]] for j in range(len(space.shape)))
    idx = rng.choice(every.shape[0], 120, replace=False)
    y = truth[idx] + rng.normal(0, 0.01, idx.size)
    mean, _ = posterior(onehot(space, every[idx]), y - y.mean(), np.ones(idx.size), ridge=1e-3)
    pred = (onehot(space, every) @ mean.numpy())
    assert np.corrcoef(pred, truth)[0, 1] > 0.99
    # with the shipped ridge and distance weights, around a centre: the best candidate wins
    centre = every[idx[np.argmax(y)]]
    cands = untried_near(space, centre, {int(i) for i in space.flat_id(every[idx])})
    order = np.argsort(truth[np.searchsorted(space.flat_id(every), space.flat_id(cands))])
    best, worst = cands[order[-1]], cands[order[:5]]
    pool = np.concatenate([best[None, :], worst])
    picks = [tuple(thompson_choice(space, centre, every[idx], y, pool, rng)) for _ in range(20)]
    assert picks.count(tuple(best)) >= 18, picks.count(tuple(best))


def test_size_terms_let_a_sizes_effect_depend_on_the_other_parameters() -> None:
    space = small_space()  # tile_m/k/n are the sizes; pipeline, output_align, l1_prefetch not
    assert size_params(space) == [0, 1, 2]
    rows = brute(space)[::37]
    terms = size_terms(space, rows)
    assert terms.shape == (rows.shape[0], 3 + (3 + 2 + 2) * 3 + 3)
    logs = np.log2(np.asarray(space.params[1].choices, dtype=float))
    tile_k = (logs - logs.mean())[rows[:, 1]]
    np.testing.assert_array_equal(terms[:, 1], tile_k)
    # the slope of tile_k for pipeline == 1: after the 3 logs, pipeline's 3 choices x 3 sizes
    np.testing.assert_array_equal(terms[:, 3 + 1 * 3 + 1], (rows[:, 3] == 1) * tile_k)
    x = design(space, rows)
    np.testing.assert_array_equal(x[:, : sum(space.shape) + 1], onehot(space, rows))
    assert x.shape[1] == sum(space.shape) + 1 + terms.shape[1]


def test_a_space_without_tile_sizes_gets_the_additive_model() -> None:
    space = small_space()
    renamed = SearchSpace([Param.generic(f"p{i}", p.choices) for i, p in enumerate(space.params)])
    rows = brute(space)[::37]
    assert size_params(renamed) == [] and size_terms(renamed, rows).shape == (rows.shape[0], 0)
    np.testing.assert_array_equal(design(renamed, rows), onehot(renamed, rows))


def test_size_terms_fit_the_buffering_trade_off_the_additive_model_misses() -> None:
    # single buffering (pipeline 1) pays off only with a deeper tile_k: an interaction
    space = small_space()
    every = brute(space)
    rng = np.random.default_rng(5)
    k = np.log2(np.asarray(space.params[1].choices, dtype=float))[every[:, 1]]
    truth = 0.1 * k + np.where(every[:, 3] == 1, 0.15 * (k - 6), 0.0)
    idx = rng.choice(every.shape[0], 200, replace=False)
    y = truth[idx] + rng.normal(0, 0.005, idx.size)
    fits = {}
    for name, basis in (("additive", onehot), ("sizes", design)):
        mean, _ = posterior(basis(space, every[idx]), y - y.mean(), np.ones(idx.size), ridge=1e-3)
        fits[name] = np.corrcoef(basis(space, every) @ mean.numpy(), truth)[0, 1]
    assert fits["sizes"] > 0.99 > fits["additive"], fits
