"""The math modules of GPUCBSampler, one by one."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
import torch
from gp_ucb_fixtures import small_space, throughput
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState, create_trial

from aoe_optuna.samplers.gp_ucb import _model as model_module
from aoe_optuna.samplers.gp_ucb._acquisition import (
    beta_at,
    improvement_if_feasible,
    ucb,
    weighted_by_success,
    within_chance_constraint,
)
from aoe_optuna.samplers.gp_ucb._candidates import CandidateSource
from aoe_optuna.samplers.gp_ucb._design import farthest_point
from aoe_optuna.samplers.gp_ucb._feasibility import FeasibilityModel
from aoe_optuna.samplers.gp_ucb._history import History, HistoryReader, read_history
from aoe_optuna.samplers.gp_ucb._local import (
    is_local_step,
    local_steps_pay,
    near_any,
    stalled_for,
)
from aoe_optuna.samplers.gp_ucb._model import FitError, Posterior, fit_gp
from aoe_optuna.samplers.neighbourhood import neighbours
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace

optuna.logging.set_verbosity(optuna.logging.ERROR)


def _smooth(x: np.ndarray) -> np.ndarray:
    return np.sin(3 * x[:, 0]) + np.cos(2 * x[:, 1]) - x[:, 2]


# ------------------------------------------------------------------ history
def _four_configs() -> tuple:
    """The small space, its distributions, and four configs of it for a study's trials."""
    space = small_space()
    dists = {p.name: CategoricalDistribution(list(p.choices)) for p in space.params}
    return space, dists, [
        {"a": 1, "b": 2, "c": 4, "mode": "x"}, {"a": 2, "b": 2, "c": 4, "mode": "y"},
        {"a": 4, "b": 2, "c": 4, "mode": "z"}, {"a": 32, "b": 32, "c": 1, "mode": "x"},
    ]


def test_history_sorts_every_state_and_reads_enqueued_params() -> None:
    space, dists, c = _four_configs()
    study = optuna.create_study(direction="minimize")
    study.add_trial(create_trial(params=c[0], distributions=dists, value=2.0))
    study.add_trial(create_trial(params=c[1], distributions=dists, value=8.0))
    study.add_trial(create_trial(params=c[2], distributions=dists, state=TrialState.FAIL))
    pruned = create_trial(params=c[3], distributions=dists, state=TrialState.PRUNED,
                          system_attrs={"constraints": [896.0]})
    study.add_trial(pruned)
    study.enqueue_trial({"a": 8, "b": 1, "c": 1, "mode": "y"})
    h = read_history(study, space)
    assert h.completed.shape == (2, 4) and h.failed.shape == (2, 4)
    assert h.pending.shape == (1, 4) and len(h.seen) == 5
    # minimise: the smaller time is the better target; log then standardised
    assert h.targets()[0] > h.targets()[1]
    np.testing.assert_allclose(h.targets(), [1.0, -1.0])
    assert space.config(h.incumbents(1)[0]) == c[0]


# -------------------------------------------------------------------- model
def test_gp_fits_a_smooth_function_and_scores_like_botorch() -> None:
    rng = np.random.default_rng(0)
    x, xt = rng.random((40, 3)), rng.random((200, 3))
    y = _smooth(x)
    fit = fit_gp(x, (y - y.mean()) / y.std())
    assert fit.fitted
    mean, std = Posterior(fit).predict(xt)
    truth = (_smooth(xt) - y.mean()) / y.std()
    assert np.corrcoef(mean, truth)[0, 1] > 0.95
    with torch.no_grad():
        post = fit.model.posterior(torch.as_tensor(xt))
    np.testing.assert_allclose(mean, post.mean.squeeze(-1).numpy(), atol=1e-4)
    np.testing.assert_allclose(std, post.variance.sqrt().squeeze(-1).numpy(), atol=1e-3)


def test_pending_points_keep_the_mean_and_collapse_the_variance() -> None:
    rng = np.random.default_rng(1)
    x = rng.random((20, 3))
    fit = fit_gp(x, _smooth(x))
    post = Posterior(fit)
    pending = np.array([[0.9, 0.1, 0.5]])
    m0, s0 = post.predict(pending)
    m1, s1 = post.condition_on_pending(fit, pending).predict(pending)
    np.testing.assert_allclose(m0, m1, atol=1e-4)
    assert s1[0] < 0.5 * s0[0]


def test_failed_fit_reuses_previous_hyperparameters_or_says_so(monkeypatch) -> None:
    rng = np.random.default_rng(2)
    x = rng.random((15, 3))
    good = fit_gp(x, _smooth(x))

    def broken(*args, **kwargs):
        raise RuntimeError("forced")

    monkeypatch.setattr(model_module, "fit_gpytorch_mll", broken)
    again = fit_gp(x, _smooth(x), previous=good.hyper)
    assert not again.fitted and again.hyper == good.hyper
    with pytest.raises(FitError, match="no previous"):
        fit_gp(x, _smooth(x))
    wrong_shape = {k: v + [0.0] for k, v in good.hyper.items()}
    with pytest.raises(FitError):  # unusable previous values count as none
        fit_gp(x, _smooth(x), previous=wrong_shape)


# -------------------------------------------------------------- feasibility
def test_feasibility_is_low_near_failures_and_absent_without_any() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((60, 2))
    bad = x[:, 0] > 0.7
    assert FeasibilityModel.fit(x, x[:0]) is None
    model = FeasibilityModel.fit(x[~bad], x[bad])
    assert model is not None
    p = model.predict(np.array([[0.95, 0.5], [0.1, 0.5]]))
    assert p[0] < 0.3 < 0.8 < p[1]


# -------------------------------------------------------------- acquisition
def test_chance_constraint_ranks_eligible_configs_by_ucb_alone() -> None:
    value = np.array([5.0, 9.0, 1.0, 7.0, 2.0])
    p = np.array([0.9, 0.3, 0.6, 0.5, 0.1])
    order = np.argsort(-within_chance_constraint(value, p, 0.5))
    # eligible (P >= 0.5) by UCB: 3 (7.0) before 0 (5.0) though it is less likely to
    # run; then the rest by P: 1 (0.3), 4 (0.1), the best UCB of all coming after
    assert order.tolist() == [3, 0, 2, 1, 4]
    nobody = within_chance_constraint(value, np.full(5, 0.2) + np.arange(5) / 100, 0.5)
    assert np.argsort(-nobody).tolist() == [4, 3, 2, 1, 0]


def test_beta_schedule_and_weighting() -> None:
    assert beta_at(50, 10_000) == 9.0 and beta_at(50, 10_000, 3.84) == 3.84
    grow = [beta_at(t, 10_000, 3.84, schedule="srinivas") for t in (1, 10, 100, 1000)]
    assert grow == sorted(grow) and grow[0] >= 3.84 and grow[-1] > grow[0]
    with pytest.raises(ValueError, match="expected"):
        beta_at(1, 10, schedule="cosine")
    score = ucb(np.array([0.0, 1.0]), np.array([1.0, 0.0]), 4.0)
    np.testing.assert_allclose(score, [2.0, 1.0])
    weighted = weighted_by_success(score, np.array([0.1, 1.0]), floor=-2.0)
    assert weighted[1] > weighted[0]
    assert weighted_by_success(score, None, 0.0) is score


# --------------------------------------------------------------- candidates
def test_exact_candidates_exclude_seen_and_pool_stays_feasible() -> None:
    space = small_space()
    rng = np.random.default_rng(4)
    exact = CandidateSource(space)
    rows = space.all_feasible()
    seen = {int(i) for i in space.flat_id(rows[:100])}
    cands = exact.unseen(seen, rng, rows[:0])
    assert cands.rows.shape[0] == space.n_feasible - 100
    assert not seen & {int(i) for i in space.flat_id(cands.rows)}
    pool = CandidateSource(space, enumerate_limit=10, pool_size=50)
    assert not pool.exact
    best = rows[:2]
    got = pool.unseen(seen, rng, best)
    assert space.is_feasible(got.rows).all()
    assert not seen & {int(i) for i in space.flat_id(got.rows)}
    near = neighbours(space, best)
    assert space.is_feasible(near).all()
    changed = (near[:, None, :] != best[None]).sum(-1)
    assert (changed == 1).any(axis=1).all()
    # the configs a prior names join a sampled pool with their neighbours, unless seen
    noted = rows[[100, 101]]
    got = {int(i) for i in space.flat_id(pool.unseen(seen, rng, best, noted=noted).rows)}
    assert {int(i) for i in space.flat_id(noted)} <= got
    assert {int(i) for i in space.flat_id(neighbours(space, noted))} - seen <= got


def test_farthest_point_picks_the_far_config() -> None:
    space = small_space()
    source = CandidateSource(space)
    cands = source.unseen(set(), np.random.default_rng(5), np.zeros((0, 4), np.int64))
    used = space.encode(space.index({"a": 1, "b": 1, "c": 1, "mode": "x"})[None, :])
    pick = farthest_point(cands, used, np.random.default_rng(5), pool=len(cands.rows))
    far = space.config(cands.rows[pick])
    assert far["mode"] != "x" and far["c"] == 32 and throughput(far) > 0


# ------------------------------------------------------------ local phase
def test_local_phase_waits_for_a_stall() -> None:
    assert stalled_for(np.array([0.0, 3.0, 1.0, 2.0])) == 2
    assert stalled_for(np.array([])) == 0
    assert is_local_step(np.array([3.0, 1.0, 1.0, 1.0]), patience=3)
    assert not is_local_step(np.array([3.0, 1.0, 1.0]), patience=2)  # odd count: global
    assert not is_local_step(np.array([1.0, 1.0, 1.0, 3.0]), patience=3)  # just improved
    assert not is_local_step(np.array([3.0, 1.0, 1.0, 1.0]), patience=None)



def test_local_phase_stops_once_its_steps_mostly_fail() -> None:
    assert local_steps_pay(0, 0) and local_steps_pay(0, 1)  # one failure is not a rule
    assert not local_steps_pay(0, 2)
    assert local_steps_pay(3, 4) and not local_steps_pay(3, 5)


def test_local_candidates_are_one_move_from_any_centre() -> None:
    space = small_space()  # a, b, c: sizes 1..32; mode: x/y/z
    rows = np.array([
        [0, 0, 0, 0],  # a centre
        [1, 0, 0, 0],  # a to the next size: one move
        [5, 0, 0, 0],  # a to any other size: one move
        [0, 0, 0, 2],  # mode x -> z: one move
        [1, 1, 0, 0],  # two parameters: two moves
        [5, 5, 4, 1],  # one move from the second centre
    ])
    centres = np.array([[0, 0, 0, 0], [5, 5, 5, 1]])
    assert near_any(space, rows, centres, 1).tolist() == [True, True, True, True, False, True]
    assert near_any(space, rows, centres, 2).tolist() == [True] * 6
    assert near_any(space, rows, centres[:0], 1).tolist() == [False] * 6


def test_a_float_moves_one_grid_step_at_a_time() -> None:
    params = [Param.generic("x", tuple(v + 0.5 for v in range(9))), Param.generic("k", (1, 2, 4))]
    space = SearchSpace(params)
    rows = np.array([[1, 0], [2, 0], [4, 0], [0, 2]])
    assert near_any(space, rows, np.array([[0, 0]]), 1).tolist() == [True, False, False, True]


def test_floored_targets_keep_the_order_of_the_good_half() -> None:
    h = History(completed=np.zeros((5, 1), dtype=np.int64),
                values=np.array([1.0, 2.0, 4.0, 8.0, 1e-6]),
                failed=np.zeros((0, 1), dtype=np.int64), pending=np.zeros((0, 1), dtype=np.int64))
    y = h.targets(floor_quantile=0.5)
    assert y[0] == y[1] == y[4] < y[2] < y[3]  # the outlier no longer stretches the scale
    assert abs(y.mean()) < 1e-12 and abs(y.std() - 1.0) < 1e-12


def test_fit_with_no_iterations_reuses_the_previous_hyperparameters() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((20, 3))
    first = fit_gp(x, _smooth(x))
    again = fit_gp(x, _smooth(x), first.hyper, warm_iter=0)
    assert not again.fitted and again.hyper == first.hyper


def test_improvement_if_feasible_ranks_gain_before_safety() -> None:
    """A likely-feasible config that cannot improve loses to a riskier one that can."""
    value = np.array([1.0, 2.0, 3.0, 0.5])  # UCB
    p_ok = np.array([1.0, 0.9, 0.5, 1.0])
    score = improvement_if_feasible(value, p_ok, best_mean=1.5)
    assert score.tolist() == pytest.approx([0.0, 0.45, 0.75, 0.0])
    assert int(np.argmax(score)) == 2
    # the floor of weighted_by_success ranks the safe config first instead
    assert int(np.argmax(weighted_by_success(value[[1, 2]], p_ok[[1, 2]], floor=-8.0))) == 0


def test_improvement_if_feasible_falls_back_to_weighted_ucb_order() -> None:
    value = np.array([1.0, 2.0, 3.0])
    score = improvement_if_feasible(value, np.array([1.0, 1.0, 0.2]), best_mean=5.0)
    assert np.all(score > 0) and int(np.argmax(score)) == 1  # 2 * 1.0 beats 3 * 0.2


def test_the_history_reader_reads_what_read_history_reads() -> None:
    """Finished trials are remembered, live ones re-read: the History is read_history's."""
    space, dists, c = _four_configs()
    study = optuna.create_study(direction="minimize")
    study.add_trial(create_trial(params=c[0], distributions=dists, value=2.0))
    study.add_trial(create_trial(params=c[1], distributions=dists, value=8.0,
                                 system_attrs={"constraints": [1.0]}))
    study.add_trial(create_trial(params=c[2], distributions=dists, state=TrialState.FAIL))
    study.add_trial(create_trial(params=c[3], distributions=dists, state=TrialState.PRUNED))
    study.enqueue_trial({"a": 8, "b": 1, "c": 1, "mode": "y"})
    running = study.ask()
    reader = HistoryReader(space)
    for finished in (False, True):
        for exclude in (None, running.number):
            new, old = reader(study, exclude), read_history(study, space, exclude)
            for name in ("completed", "values", "failed", "pending", "infeasible"):
                assert np.array_equal(getattr(new, name), getattr(old, name))
            assert new.seen == old.seen
        if not finished:
            study.tell(running, 3.0)
    assert reader(study).completed.shape == (3, 4) and new.infeasible is not None


def test_a_pool_is_the_distinct_unseen_rows_in_lexicographic_order() -> None:
    space = small_space()
    source = CandidateSource(space, enumerate_limit=0, pool_size=40)
    rng = np.random.default_rng(4)
    incumbents = space.sample_feasible(3, rng)
    seen = {int(i) for i in space.flat_id(space.sample_feasible(10, rng))}
    cands = source.unseen(seen, np.random.default_rng(5), incumbents)
    # what np.unique(axis=0) and a filter on the seen ids give from the same draws
    draws = np.random.default_rng(5)
    pool = np.concatenate([space.sample_feasible(40, draws, exclude=seen),
                           neighbours(space, incumbents)])
    expected = np.unique(pool, axis=0)
    expected = expected[~np.isin(space.flat_id(expected), list(seen))]
    assert np.array_equal(cands.rows, expected) and cands.rows.shape[0] > 40
    np.testing.assert_array_equal(cands.x, space.encode(expected))
