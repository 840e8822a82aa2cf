"""The prior-mean GP: its loss is the MAP objective, its weight follows the evidence."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import lognorm, multivariate_normal

from aoe_optuna.samplers.gp_ucb._model import Posterior
from aoe_optuna.samplers.gp_ucb._prior_model import (
    LS_SCALE,
    NOISE_LOC,
    NOISE_SCALE,
    PriorHyper,
    PriorPosterior,
    fit_prior_gp,
    loss_and_gradient,
    ls_loc,
)


def _matern(a: np.ndarray, b: np.ndarray, ls: np.ndarray) -> np.ndarray:
    r = np.sqrt(5.0 * (((a[:, None, :] - b[None, :, :]) / ls) ** 2).sum(-1))
    return (1 + r + r * r / 3) * np.exp(-r)


def _reference_loss(theta: np.ndarray, x: np.ndarray, f: np.ndarray, y: np.ndarray) -> float:
    """-(log N(y; c + w f, s M + noise I) + log priors) / n, from scipy's densities."""
    h = PriorHyper.from_vector(theta)
    n, d = x.shape
    cov = h.outputscale * _matern(x, x, h.lengthscale) + h.noise * np.eye(n)
    loglik = multivariate_normal(h.constant + h.weight * f, cov).logpdf(y)
    logp = lognorm(s=LS_SCALE, scale=math.exp(ls_loc(d))).logpdf(h.lengthscale).sum()
    logp += lognorm(s=NOISE_SCALE, scale=math.exp(NOISE_LOC)).logpdf(h.noise)
    logp += lognorm(s=1.0, scale=1.0).logpdf(h.outputscale)
    return -(loglik + logp) / n


@pytest.mark.parametrize(("n", "d", "seed"), [(3, 1, 0), (15, 3, 1), (60, 6, 2)])
def test_loss_is_the_map_objective_and_its_gradient_the_difference_quotient(
        n: int, d: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, f, y = rng.random((n, d)), rng.standard_normal(n), rng.standard_normal(n)
    theta = np.concatenate([rng.uniform(-2, 1, d), [math.log(0.05), math.log(0.7), 0.3, 0.8]])
    tx, tf, ty = (torch.as_tensor(a, dtype=torch.float64) for a in (x, f, y))
    value, grad = loss_and_gradient(theta, tx, tf, ty)
    assert value == pytest.approx(_reference_loss(theta, x, f, y), rel=1e-9)
    eps = 1e-6
    for i in range(theta.shape[0]):
        step = np.zeros_like(theta)
        step[i] = eps
        quotient = (loss_and_gradient(theta + step, tx, tf, ty)[0]
                    - loss_and_gradient(theta - step, tx, tf, ty)[0]) / (2 * eps)
        assert grad[i] == pytest.approx(quotient, rel=1e-5, abs=1e-7)


def _data(follow: float, seed: int = 0, n: int = 40) -> tuple[np.ndarray, ...]:
    """Targets that are ``follow`` x the prior's score plus a smooth function of x."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    f = rng.standard_normal(n)
    y = follow * f + (1 - follow) * np.sin(5 * x[:, 0]) + 0.05 * rng.standard_normal(n)
    return x, f, (y - y.mean()) / y.std()


def test_the_weight_grows_where_the_measurements_follow_the_prior() -> None:
    good = fit_prior_gp(*_data(0.9))
    assert good.weight > 0.7
    assert good.outputscale < 0.5  # what the prior explains, the kernel need not


def test_a_misleading_prior_loses_its_weight() -> None:
    rng = np.random.default_rng(3)
    x, _, y = _data(0.0)
    bad = fit_prior_gp(x, rng.standard_normal(x.shape[0]), y)
    assert bad.weight < 0.15


def test_without_weight_at_unit_scale_the_posterior_is_the_plain_gps() -> None:
    x, f, y = _data(0.5)
    hyper = PriorHyper(np.array([0.3, 0.5, 0.8]), 0.01, 1.0, 0.2, 0.0)
    cands = np.random.default_rng(1).random((25, 3))
    mean, std = PriorPosterior(hyper, x, f, y).predict(cands, np.zeros(25))
    plain_mean, plain_std = Posterior.of_values(hyper.lengthscale, 0.2, 0.01, x, y).predict(cands)
    np.testing.assert_allclose(mean, plain_mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(std, plain_std, rtol=1e-5, atol=1e-5)


def test_pending_configs_keep_the_mean_and_shrink_the_std_there() -> None:
    x, f, y = _data(0.8)
    hyper = PriorHyper(np.array([0.3, 0.5, 0.8]), 0.01, 0.5, 0.0, 0.8)
    post = PriorPosterior(hyper, x, f, y)
    far = np.array([[0.95, 0.05, 0.5]])
    before = post.predict(far, np.array([1.0]))
    after = post.condition_on_pending(far).predict(far, np.array([1.0]))
    assert after[0][0] == pytest.approx(before[0][0], abs=1e-4)
    assert after[1][0] < 0.5 * before[1][0]


def test_stored_hyperparameters_round_trip_and_refuse_another_models() -> None:
    hyper = fit_prior_gp(*_data(0.7), max_iter=5)
    back = PriorHyper.from_stored(hyper.stored(), 3)
    assert back is not None
    np.testing.assert_allclose(back.vector(), hyper.vector())
    assert PriorHyper.from_stored(hyper.stored(), 4) is None  # another space's inputs
    assert PriorHyper.from_stored({"covar_module.raw_lengthscale": [1.0]}, 3) is None
