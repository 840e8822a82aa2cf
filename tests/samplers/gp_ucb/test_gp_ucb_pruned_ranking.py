"""At 1,000 trials: the best candidates without every std, and a smaller pool."""

from __future__ import annotations

import numpy as np

from aoe_optuna.samplers.gp_ucb._acquisition import success_floor, ucb, weighted_by_success
from aoe_optuna.samplers.gp_ucb._candidates import MIN_POOL, pool_size_at
from aoe_optuna.samplers.gp_ucb._model import Posterior
from aoe_optuna.samplers.gp_ucb._pruned_ranking import best_first


def _posterior(n: int = 300, d: int = 5, seed: int = 0) -> Posterior:
    rng = np.random.default_rng(seed)
    x = rng.random((n, d))
    y = np.sin(4 * x[:, 0]) + x[:, 1] ** 2 + 0.05 * rng.standard_normal(n)
    return Posterior.of_values(np.full(d, 0.3), 0.1, 0.01, x, (y - y.mean()) / y.std())


def test_the_bound_is_never_below_the_std_and_the_mean_is_predicts() -> None:
    post = _posterior()
    cands = np.random.default_rng(1).random((3000, 5))
    mean, std = post.predict(cands)
    bound_mean, bound = post.mean_and_bound(cands)
    np.testing.assert_allclose(bound_mean, mean, rtol=0, atol=1e-5)  # float32 blocks
    assert (bound >= std - 1e-6).all() and (bound <= 1.0).all()
    np.testing.assert_allclose(post.std(cands[:50]), std[:50], rtol=1e-5, atol=1e-6)


def test_the_bound_blocks_in_cache_give_one_blocks_values_and_ranking() -> None:
    post = _posterior(n=1000)
    cands = np.random.default_rng(2).random((5000, 5))
    blocked = post.mean_and_bound(cands)  # 262 rows a block at 1,000 trials
    whole = post.mean_and_bound(cands, chunk=8192)
    for a, b in zip(blocked, whole, strict=True):  # to float32's rounding
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    top = [np.argsort(-ucb(m, s, 9.0))[:16] for m, s in (blocked, whole)]
    np.testing.assert_array_equal(top[0], top[1])


def test_the_pruned_ranking_is_the_full_one_with_a_fraction_of_the_stds() -> None:
    post = _posterior()
    cands = np.random.default_rng(2).random((20000, 5))
    mean, std = post.predict(cands)
    _, bound = post.mean_and_bound(cands)
    p = np.random.default_rng(3).uniform(0.2, 1.0, cands.shape[0])
    floor = success_floor(mean, bound, 9.0)

    def score_of(idx: np.ndarray, s: np.ndarray) -> np.ndarray:
        return weighted_by_success(ucb(mean[idx], s, 9.0), p[idx], floor)

    full = score_of(np.arange(cands.shape[0]), std)
    best, evaluated = best_first(score_of, bound, lambda idx: post.std(cands[idx]), 16)
    np.testing.assert_array_equal(best, np.argsort(-full, kind="stable")[:16])
    assert evaluated < cands.shape[0] // 2


def test_the_pool_shrinks_past_the_threshold_and_not_below_its_floor() -> None:
    assert pool_size_at(20000, 299, 300) == 20000
    assert pool_size_at(20000, 1000, 300) == 6000
    assert pool_size_at(20000, 10**6, 300) == MIN_POOL
    assert pool_size_at(20000, 1000, None) == 20000
    assert pool_size_at(500, 1000, 300) == 500  # a small pool stays as asked
