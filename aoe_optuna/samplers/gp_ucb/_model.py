"""The performance model: a BoTorch SingleTaskGP on encoded configs.

Kernel choice: one Matern-5/2 kernel with a length scale per encoded column,
one-hot columns included, rather than MixedSingleTaskGP. On a one-hot block
every pair of categories is the same distance apart at equal length scales,
so no false order is imposed, and the fit learns how much each category
matters; it is one kernel with about d hyperparameters instead of
MixedSingleTaskGP's sum-and-product of two kernels, which keeps a fit at 200
trials well inside the 0.5 s budget. Length scales take BoTorch's
dimension-scaled log-normal prior (Hvarfner et al., 2024), which keeps the fit
sane on a dozen points; the noise is fitted (measurements are noisy).

Hyperparameters can be warm-started from a previous fit (read from storage by
the sampler), and a fit that fails falls back to them rather than failing.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.kernels import MaternKernel
from gpytorch.mlls import ExactMarginalLogLikelihood

_log = logging.getLogger(__name__)

Hyper = dict[str, list[float]]  # raw parameter name -> flat values (JSON-able)

# Scoring chunk: rows of candidates per posterior call (bounds the n x chunk cross-covariance).
SCORE_CHUNK = 8192


class FitError(RuntimeError):
    """Neither a fit nor a previous set of hyperparameters gave a usable model."""


@dataclass
class FittedGP:
    model: SingleTaskGP
    hyper: Hyper
    fitted: bool  # False: hyperparameters reused without a fit (fallback or pending conditioning)


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """GPs of a few hundred points gain nothing from threads, and on a shared machine
    torch's spinning intra-op threads made each fit about ten times slower (measured)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _build(x: torch.Tensor, y: torch.Tensor) -> SingleTaskGP:
    covar = get_covar_module_with_dim_scaled_prior(ard_num_dims=x.shape[-1], use_rbf_kernel=False)
    return SingleTaskGP(x, y.unsqueeze(-1), covar_module=covar, outcome_transform=None)


def hyperparameters(model: SingleTaskGP) -> Hyper:
    return {
        name: [float(v) for v in p.detach().reshape(-1)] for name, p in model.named_parameters()
    }


def load_hyperparameters(model: SingleTaskGP, hyper: Hyper) -> bool:
    """Copy ``hyper`` into ``model`` where names and sizes match; True if all matched."""
    params = dict(model.named_parameters())
    if set(params) != set(hyper):
        return False
    for name, p in params.items():
        if p.numel() != len(hyper[name]) or not all(math.isfinite(v) for v in hyper[name]):
            return False
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(torch.tensor(hyper[name], dtype=p.dtype).reshape(p.shape))
    return True


def fit_gp(
    x: np.ndarray, y: np.ndarray, previous: Hyper | None = None,
    warm_iter: int = 25, cold_iter: int = 200,
) -> FittedGP:
    """Fit by marginal likelihood, warm-started from ``previous``; fall back to it on failure."""
    with one_torch_thread():
        return _fit(x, y, previous, warm_iter, cold_iter)


def _fit(x: np.ndarray, y: np.ndarray, previous: Hyper | None, warm_iter: int,
         cold_iter: int) -> FittedGP:
    tx = torch.as_tensor(x, dtype=torch.float64)
    ty = torch.as_tensor(y, dtype=torch.float64)
    model = _build(tx, ty)
    warm = previous is not None and load_hyperparameters(model, previous)
    try:
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            options = {"maxiter": warm_iter if warm else cold_iter}
            fit_gpytorch_mll(mll, optimizer_kwargs={"options": options})
        hyper = hyperparameters(model)
        if not all(math.isfinite(v) for vals in hyper.values() for v in vals):
            raise FloatingPointError("non-finite hyperparameters after the fit")
        model.eval()
        return FittedGP(model, hyper, fitted=True)
    except Exception as exc:  # noqa: BLE001 - any fit failure must leave the study running
        _log.warning("GP fit failed (%s: %s); reusing previous hyperparameters",
                     type(exc).__name__, exc)
        if not warm:
            raise FitError(f"GP fit failed and no previous hyperparameters: {exc}") from exc
        model = _build(tx, ty)
        assert previous is not None
        load_hyperparameters(model, previous)
        model.eval()
        return FittedGP(model, previous, fitted=False)


class Posterior:
    """Exact GP posterior of a fitted model, for scoring many candidates quickly.

    Uses the fitted BoTorch kernel, constant mean and noise, with one Cholesky
    factor computed up front; scoring is then one kernel block and one
    triangular solve per chunk (gpytorch's joint posterior over a chunk would
    build the chunk's full covariance). Pending configs enter by the kriging
    believer: observed at their posterior mean, so the mean is unchanged and
    the variance near a running config collapses; N workers then propose N
    different configs.
    """

    def __init__(self, fit: FittedGP, x: np.ndarray | None = None, y: np.ndarray | None = None):
        model = fit.model
        kernel = model.covar_module
        if not isinstance(kernel, MaternKernel) or kernel.nu != 2.5:
            raise TypeError("Posterior expects the Matern-5/2 kernel that _build makes")
        self._lengthscale = kernel.lengthscale.detach().reshape(-1)
        self._const = float(model.mean_module.constant.detach())
        self._noise = float(model.likelihood.noise.detach().reshape(-1)[0])
        tx = model.train_inputs[0] if x is None else torch.as_tensor(x, dtype=torch.float64)
        ty = model.train_targets if y is None else torch.as_tensor(y, dtype=torch.float64)
        self._x = tx.detach()
        self._y = ty.detach()
        with torch.no_grad(), one_torch_thread():
            k = self._k(self._x, self._x)
            k = k + (self._noise + 1e-8) * torch.eye(k.shape[0], dtype=k.dtype)
            self._chol = torch.linalg.cholesky(k)
            self._alpha = torch.cholesky_solve((self._y - self._const).unsqueeze(-1), self._chol)

    def condition_on_pending(self, fit: FittedGP, x_pending: np.ndarray) -> Posterior:
        if x_pending.shape[0] == 0:
            return self
        believed, _ = self.predict(x_pending)
        x = np.concatenate([self._x.numpy(), x_pending])
        y = np.concatenate([self._y.numpy(), believed])
        return Posterior(fit, x, y)

    def _k(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Matern-5/2 with the fitted length scales (unit output scale, as _build makes it)."""
        a = a / self._lengthscale.to(a.dtype)
        b = b / self._lengthscale.to(b.dtype)
        sq = (a * a).sum(-1, keepdim=True) - 2 * a @ b.T + (b * b).sum(-1)
        r = math.sqrt(5.0) * sq.clamp_min(1e-30).sqrt()
        return (1.0 + r + r * r / 3.0) * torch.exp(-r)

    def predict(self, x: np.ndarray, chunk: int = SCORE_CHUNK) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of the latent function, chunk by chunk."""
        means, stds = [np.zeros(0)], [np.zeros(0)]
        # float32 for the candidate blocks: twice as fast, and the ranking of tens of
        # thousands of candidates does not need float64 (the factor itself is float64).
        train, chol, alpha = self._x.float(), self._chol.float(), self._alpha.float()
        with torch.no_grad(), one_torch_thread():
            for start in range(0, x.shape[0], chunk):
                tx = torch.as_tensor(x[start : start + chunk], dtype=torch.float32)
                kx = self._k(tx, train)
                means.append((self._const + kx @ alpha).squeeze(-1).double().numpy())
                v = torch.linalg.solve_triangular(chol, kx.T, upper=False)
                var = (1.0 - (v * v).sum(0)).clamp_min(1e-12)  # k(x, x) = 1
                stds.append(var.sqrt().double().numpy())
        return np.concatenate(means), np.concatenate(stds)
