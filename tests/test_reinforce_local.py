"""Local proposals: neighbourhoods against brute force, smoothed centres, step rings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest

from aoe_optuna.samplers.neighbourhood import ball, neighbours
from aoe_optuna.samplers.reinforce import ReinforceSampler
from aoe_optuna.samplers.reinforce._local import (
    RING_DECAY,
    local_proposal,
    nearest_ring,
    pick_centre,
    smoothed,
    steps_away,
    untried_near,
)
from aoe_optuna.samplers.reinforce._local_model import onehot, posterior, thompson_choice
from aoe_optuna.spec import load_spec
from tests.test_reinforce import rows_of, run
from tests.test_reinforce_masking import brute, small_space

STUDIES = Path(__file__).resolve().parents[1] / "studies"


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
    picks = {tuple(pick_centre(space, list(rows), np.exp(logs), rng)) for _ in range(50)}
    assert tuple(lucky) not in picks


def test_centre_skips_failures_and_needs_a_measurement() -> None:
    space = small_space()
    rows = list(brute(space)[:5])
    values = np.array([np.nan, 2.0, np.nan, 1.0, np.nan])
    rng = np.random.default_rng(0)
    got = {tuple(pick_centre(space, rows, values, rng)) for _ in range(50)}
    assert got <= {tuple(rows[1]), tuple(rows[3])}
    assert pick_centre(space, rows, np.full(5, np.nan), rng) is None
    assert local_proposal(space, [], np.zeros(0), set(), rng) is None


def test_an_all_local_sampler_stays_near_its_best_and_never_repeats() -> None:
    space = small_space()
    sampler = ReinforceSampler(space=space, seed=2, batch_size=4, local=1.0)
    study = run(space, sampler, 40)
    rows = rows_of(space, study)
    assert space.is_feasible(rows).all()
    assert len(set(space.flat_id(rows).tolist())) == 40
    values = np.array([t.value for t in study.trials])
    for n in range(1, 40):
        top = rows[np.argsort(-values[:n], kind="stable")[:8]]
        dist = (rows[n][None, :] != top).sum(axis=1).min()
        assert dist <= 2, (n, dist)


def test_local_runs_resume_identically(tmp_path) -> None:
    space = small_space()
    kw = {"space": space, "seed": 4, "batch_size": 4, "local": 0.5}
    straight = run(space, ReinforceSampler(**kw), 24)
    url = f"sqlite:///{tmp_path / 'local.db'}"
    first = optuna.create_study(storage=url, study_name="s", direction="maximize",
                                sampler=ReinforceSampler(**kw))
    run(space, ReinforceSampler(**kw), 13, study=first)
    resumed = optuna.load_study(storage=url, study_name="s", sampler=ReinforceSampler(**kw))
    run(space, resumed.sampler, 11, study=resumed)
    np.testing.assert_array_equal(rows_of(space, straight), rows_of(space, resumed))


def test_local_share_must_be_a_share() -> None:
    with pytest.raises(ValueError, match="local"):
        ReinforceSampler(space=small_space(), local=1.5)


def test_onehot_has_one_column_per_choice_and_an_intercept() -> None:
    space = small_space()
    rows = brute(space)[:7]
    x = onehot(space, rows)
    assert x.shape == (7, sum(space.shape) + 1)
    np.testing.assert_array_equal(x.sum(axis=1), len(space.shape) + 1)


def test_posterior_learns_additive_effects_and_the_draw_uses_them() -> None:
    space = small_space()
    every = brute(space)
    rng = np.random.default_rng(3)
    effect = [rng.normal(0, 0.2, k) for k in space.shape]
    truth = sum(effect[j][every[:, j]] for j in range(len(space.shape)))
    idx = rng.choice(every.shape[0], 120, replace=False)
    y = truth[idx] + rng.normal(0, 0.01, idx.size)
    mean, cov = posterior(onehot(space, every[idx]), y - y.mean(), np.ones(idx.size), ridge=1e-3)
    pred = onehot(space, every) @ mean
    assert np.corrcoef(pred, truth)[0, 1] > 0.99
    assert np.all(np.linalg.eigvalsh(cov) > 0)
    best = int(np.argmax(truth))
    cands = np.stack([every[best], *every[np.argsort(truth)[:5]]])  # the best and five worst
    picks = [tuple(thompson_choice(space, every[idx], y, np.ones(idx.size), cands, rng))
             for _ in range(20)]
    assert picks.count(tuple(every[best])) >= 19
