"""The GP's training loss and its gradient in closed form, for BoTorch's L-BFGS fit.

``fit_gpytorch_mll`` spent almost all of its time in gpytorch's machinery
around the loss (lazy kernel tensors, linear operators, memoisation) and in
autograd through the Cholesky factor, not in the arithmetic: at 200 trials
one loss-and-gradient evaluation took about 10 ms, at 1000 trials 0.3 s. For
the model ``_model._build`` makes (Matern-5/2 with ARD length scales, a
constant mean, homoskedastic noise, log-normal priors on the noise and length
scales) the negative log marginal likelihood per point and its gradient have
a short closed form: one kernel block, one Cholesky factor, its inverse and
a few products, about a quarter of the time. Value and gradient equal
gpytorch's to rounding (a test holds them to 1e-10); everything around the
loss stays BoTorch's: ``fit_gpytorch_mll`` gets it as its ``closure`` and
keeps its bounds, retries and prior resampling.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import MaternKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.likelihoods.noise_models import HomoskedasticNoise
from gpytorch.means import ConstantMean
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import LogNormalPrior
from linear_operator.utils.cholesky import psd_safe_cholesky

# the model's raw parameters (each is its value: no constraint transform is enforced)
PARAMETERS = (
    "likelihood.noise_covar.raw_noise",
    "mean_module.raw_constant",
    "covar_module.raw_lengthscale",
)


def supports(model: SingleTaskGP) -> bool:
    """True for the model this loss is written for (any other keeps gpytorch's loss)."""
    return (
        isinstance(model.covar_module, MaternKernel)
        and model.covar_module.nu == 2.5
        and model.covar_module.active_dims is None
        and model.covar_module.ard_num_dims == model.train_inputs[0].shape[-1]
        and isinstance(model.mean_module, ConstantMean)
        and isinstance(model.likelihood, GaussianLikelihood)
        and isinstance(model.likelihood.noise_covar, HomoskedasticNoise)
        and getattr(model, "input_transform", None) is None
        and getattr(model, "outcome_transform", None) is None
        and not list(model.added_loss_terms())
        and len(model.train_inputs) == 1
        and model.train_inputs[0].dim() == 2
        and model.train_targets.dim() == 1
        and {name for name, _ in model.named_parameters()} == set(PARAMETERS)
        and not model.likelihood.noise_covar.raw_noise_constraint.enforced
        and not model.covar_module.raw_lengthscale_constraint.enforced
        and [type(prior) for _, _, prior, _, _ in model.named_priors()]
        == [LogNormalPrior, LogNormalPrior]
        and model.likelihood.noise_covar.noise_prior is not None
        and model.covar_module.lengthscale_prior is not None
    )


def loss_closure(
    mll: ExactMarginalLogLikelihood,
) -> Callable[[], tuple[torch.Tensor, tuple[torch.Tensor, ...]]]:
    """What ``fit_gpytorch_mll`` takes as ``closure``: the loss and its analytic gradient."""
    model = mll.model
    params = [p for _, p in mll.named_parameters() if p.requires_grad]
    named = dict(model.named_parameters())
    order = [next(k for k, v in named.items() if v is p) for p in params]
    x = model.train_inputs[0].detach()
    x = x - x.mean(dim=-2, keepdim=True)  # distances do not change; cancellation does
    y = model.train_targets.detach()
    noise_prior = model.likelihood.noise_covar.noise_prior
    ls_prior = model.covar_module.lengthscale_prior

    def closure(**_: Any) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        with torch.no_grad():
            value, grads = _loss_and_gradient(
                x, y, named["covar_module.raw_lengthscale"],
                named["likelihood.noise_covar.raw_noise"], named["mean_module.raw_constant"],
                noise_prior, ls_prior,
            )
        return value, tuple(grads[k].reshape(p.shape) for k, p in zip(order, params, strict=True))

    return closure


def _log_normal(v: torch.Tensor, prior: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """log density of a LogNormalPrior at ``v`` and its derivative in ``v``.

    The prior's variance and log scale are taken in the prior's own dtype, as
    torch's Normal.log_prob takes them, so the value is the same as gpytorch's.
    """
    mu = float(prior.loc)
    var = float(prior.scale**2)
    log_scale = float(prior.scale.log())
    lv = v.log()
    logp = -((lv - mu) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi)) - lv
    return logp, -(1.0 + (lv - mu) / var) / v


def matern52(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Matern-5/2 correlations of the rows of ``z`` (inputs over lengthscales), with the
    scaled distances ``rho = sqrt(5) r`` and ``exp(-rho)`` the gradients reuse; built in
    place, one n x n buffer at a time."""
    norms = (z * z).sum(-1)
    sq = (norms[:, None] + norms[None, :]).addmm_(z, z.T, alpha=-2.0).clamp_min_(0.0)
    sq.diagonal().zero_()
    rho = sq.sqrt_().mul_(math.sqrt(5.0))
    e = torch.exp(-rho)
    return (rho * (1.0 / 3.0) + 1.0).mul_(rho).add_(1.0).mul_(e), rho, e


def _loss_and_gradient(
    x: torch.Tensor, y: torch.Tensor, ls: torch.Tensor, noise: torch.Tensor,
    constant: torch.Tensor, noise_prior: Any, ls_prior: Any,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """-(log p(y | X, theta) + log p(theta)) / n and its gradient, without autograd.

    With K = k(X, X) + noise I, a = K^-1 (y - c), W = K^-1 - a a^T and
    rho = sqrt(5) r the scaled distance, the negative log likelihood's gradient is
    0.5 tr(W dK): dK/dnoise = I, dK/dls_d = 5/3 (1 + rho) exp(-rho) (x_id - x_jd)^2 / ls_d^3,
    and -sum(a) for the constant; the priors add their log-normal derivatives.
    """
    n = y.shape[-1]
    ls = ls.reshape(-1)
    k, rho, e = matern52(x / ls)
    k.diagonal().add_(noise.reshape(()))
    chol = psd_safe_cholesky(k)
    a = torch.cholesky_solve((y - constant).unsqueeze(-1), chol)
    quad = ((y - constant).unsqueeze(-1) * a).sum()
    half_log_det = chol.diagonal().log().sum()
    log_lik = -0.5 * (n * math.log(2 * math.pi) + quad) - half_log_det
    noise_logp, noise_dlogp = _log_normal(noise.reshape(()), noise_prior)
    ls_logp, ls_dlogp = _log_normal(ls, ls_prior)
    value = -(log_lik + noise_logp + ls_logp.sum()) / n
    w = torch.cholesky_inverse(chol).sub_(a @ a.T)
    trace_w = w.diagonal().sum()
    p = w.mul_(rho.add_(1.0).mul_(e).mul_(5.0 / 3.0))  # W * 5/3 (1 + rho) e^-rho, in place
    sq_x = x * x
    dls = (p.sum(1) @ sq_x - (x * (p @ x)).sum(0)) / ls**3
    grads = {
        "likelihood.noise_covar.raw_noise": (0.5 * trace_w - noise_dlogp).reshape(1) / n,
        "mean_module.raw_constant": -a.sum() / n,
        "covar_module.raw_lengthscale": (dls - ls_dlogp) / n,
    }
    return value, grads
