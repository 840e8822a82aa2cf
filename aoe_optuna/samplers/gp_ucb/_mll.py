"""The GP's training loss in plain torch: gpytorch's exact marginal likelihood, op for op.

``fit_gpytorch_mll`` spends almost all of its time in gpytorch's machinery
around the loss (lazy kernel tensors, linear operators, representation trees,
memoisation), not in the arithmetic: at 200 trials one loss-and-gradient
evaluation takes about 17 ms, of which the Cholesky factor and the kernel
block are well under 2 ms. This module computes the same negative log marginal
likelihood of the model ``_model._build`` makes (Matern-5/2 with ARD length
scales, a constant mean, homoskedastic noise, their priors) with the same
torch operations in the same order, so value and gradient are bit for bit
those of gpytorch's ``ExactMarginalLogLikelihood`` (a test holds it to that),
and L-BFGS takes exactly the same steps. Everything around the loss stays
BoTorch's: ``fit_gpytorch_mll`` gets it as its ``closure``, and keeps its
bounds, retries and prior resampling.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from botorch.models import SingleTaskGP
from botorch.optim.closures import ForwardBackwardClosure
from gpytorch.kernels import MaternKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.likelihoods.noise_models import HomoskedasticNoise
from gpytorch.means import ConstantMean
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator.utils.cholesky import psd_safe_cholesky


def supports(model: SingleTaskGP) -> bool:
    """True for the model layout this loss reproduces (anything else keeps gpytorch's)."""
    return (
        isinstance(model.covar_module, MaternKernel)
        and model.covar_module.nu == 2.5
        and model.covar_module.active_dims is None
        # with one column, MaternKernel takes another path (its own autograd function)
        and (model.covar_module.ard_num_dims or 0) > 1
        and isinstance(model.mean_module, ConstantMean)
        and isinstance(model.likelihood, GaussianLikelihood)
        and isinstance(model.likelihood.noise_covar, HomoskedasticNoise)
        and getattr(model, "input_transform", None) is None
        and getattr(model, "outcome_transform", None) is None
        and not list(model.added_loss_terms())
        and len(model.train_inputs) == 1
        and model.train_inputs[0].dim() == 2
        and model.train_targets.dim() == 1
    )


def negative_mll(model: SingleTaskGP) -> torch.Tensor:
    """-log p(y | X, theta) - log p(theta), divided by n: gpytorch's value, bit for bit."""
    x = model.train_inputs[0]
    y = model.train_targets
    kernel = model.covar_module
    # MaternKernel.forward: centre on the inputs' mean, divide by the length scales
    ls = kernel.lengthscale
    centre = x.mean(dim=-2, keepdim=True)
    x1 = (x - centre).div(ls)
    x2 = (x - centre).div(ls)
    # gpytorch.kernels.kernel.sq_dist / dist with x1 == x2 and inputs that need grad
    adjustment = x1.mean(-2, keepdim=True)
    x1 = x1 - adjustment
    x1_norm = x1.pow(2).sum(dim=-1, keepdim=True)
    x1_pad = torch.ones_like(x1_norm)
    x2 = x2 - adjustment
    x2_norm = x2.pow(2).sum(dim=-1, keepdim=True)
    x2_pad = torch.ones_like(x2_norm)
    a = torch.cat([-2.0 * x1, x1_norm, x1_pad], dim=-1)
    b = torch.cat([x2, x2_pad, x2_norm], dim=-1)
    distance = a.matmul(b.transpose(-2, -1)).clamp_min_(0).clamp_min_(1e-30).sqrt_()
    exp_component = torch.exp(-math.sqrt(5.0) * distance)
    constant_component = (math.sqrt(5) * distance).add(1).add(5.0 / 3.0 * distance**2)
    k = constant_component * exp_component
    # GaussianLikelihood: K + noise I, densified as linear_operator's SumLinearOperator does
    n = y.shape[-1]
    noise = model.likelihood.noise_covar.noise
    cov = (0 + k + torch.diag_embed(noise.expand(n))).contiguous()
    # torch.distributions.MultivariateNormal.log_prob on that covariance's Cholesky factor
    mean = model.mean_module.constant.unsqueeze(-1).expand(n)
    chol = psd_safe_cholesky(cov).contiguous()
    diff = y - mean
    # torch's _batch_mahalanobis, with its batch of one
    flat_x = diff.reshape(-1, 1, n).permute(1, 2, 0)
    m = torch.linalg.solve_triangular(chol.reshape(-1, n, n), flat_x, upper=False)
    m = m.pow(2).sum(-2).t().reshape(diff.shape[:-1])
    half_log_det = chol.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    res = -0.5 * (n * math.log(2 * math.pi) + m) - half_log_det
    # ExactMarginalLogLikelihood._add_other_terms, then the division by n
    for _, module, prior, closure, _ in model.named_priors():
        term = prior.log_prob(closure(module))
        res.add_(term.view(*term.shape[: res.ndim], -1).sum(dim=-1))
    return -res.div_(n)


def loss_closure(mll: ExactMarginalLogLikelihood) -> ForwardBackwardClosure:
    """What ``fit_gpytorch_mll`` takes as ``closure``: the loss above and its gradient."""
    params = {name: p for name, p in mll.named_parameters() if p.requires_grad}
    model = mll.model
    forward: Callable[[], torch.Tensor] = lambda: negative_mll(model)  # noqa: E731
    return ForwardBackwardClosure(forward=forward, parameters=params)
