"""The closed-form training loss is gpytorch's, to rounding, so fits land where they did."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from botorch.optim.closures import get_loss_closure_with_grads
from gpytorch.mlls import ExactMarginalLogLikelihood

from aoe_optuna.samplers.gp_ucb._mll import loss_closure, supports
from aoe_optuna.samplers.gp_ucb._model import _build, fit_gp


def _model(n: int, d: int, seed: int):
    rng = np.random.default_rng(seed)
    x = torch.as_tensor(rng.random((n, d)))
    y = torch.as_tensor(rng.standard_normal(n))
    model = _build(x, y)
    with torch.no_grad():
        model.covar_module.raw_lengthscale.copy_(torch.as_tensor(rng.uniform(0.05, 3.0, (1, d))))
        model.likelihood.noise_covar.raw_noise.fill_(rng.uniform(1e-3, 0.3))
        model.mean_module.raw_constant.fill_(rng.normal())
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    mll.train()
    return model, mll


@pytest.mark.parametrize(("n", "d", "seed"),
                         [(3, 1, 0), (12, 3, 1), (57, 8, 2), (200, 19, 3), (300, 25, 4)])
def test_value_and_gradient_equal_gpytorchs(n: int, d: int, seed: int) -> None:
    model, mll = _model(n, d, seed)
    assert supports(model)
    params = {k: p for k, p in mll.named_parameters() if p.requires_grad}
    value, grads = get_loss_closure_with_grads(mll, params)()
    grads = tuple(g.clone() for g in grads)
    fast_value, fast_grads = loss_closure(mll)()
    assert abs(value.item() - fast_value.item()) <= 1e-12 * abs(value.item())
    assert len(grads) == len(fast_grads) == 3
    for g, fast in zip(grads, fast_grads, strict=True):
        assert g.shape == fast.shape
        torch.testing.assert_close(fast, g, rtol=1e-10, atol=1e-13)


def test_a_fit_lands_where_gpytorchs_loss_lands(monkeypatch) -> None:
    rng = np.random.default_rng(7)
    x, y = rng.random((40, 4)), np.sin(6 * rng.random(40))
    fast = fit_gp(x, y, None, 10, 200)
    monkeypatch.setattr("aoe_optuna.samplers.gp_ucb._model.supports", lambda model: False)
    slow = fit_gp(x, y, None, 10, 200)
    assert fast.fitted and slow.fitted
    for name, values in slow.hyper.items():
        np.testing.assert_allclose(fast.hyper[name], values, rtol=1e-4, atol=1e-6)


def test_other_models_keep_gpytorchs_loss() -> None:
    model, _ = _model(10, 2, 0)
    model.covar_module.nu = 1.5
    assert not supports(model)
