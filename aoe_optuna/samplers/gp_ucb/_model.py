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
from dataclasses import dataclass

import numpy as np
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.kernels import MaternKernel
from gpytorch.mlls import ExactMarginalLogLikelihood

from aoe_optuna.samplers.gp_ucb._mll import loss_closure, supports
from aoe_optuna.samplers.torch_threads import one_torch_thread

_log = logging.getLogger(__name__)

Hyper = dict[str, list[float]]  # raw parameter name -> flat values (JSON-able)

# Scoring chunk: rows of candidates per posterior call (bounds the n x chunk cross-covariance).
SCORE_CHUNK = 8192
# mean_and_bound's block, in float32 entries of the cross-covariance: its half a dozen
# elementwise passes run in cache at 256 rows x 1,000 trials (1 MB), and took half the
# time of 8,192-row blocks at 1,000 trials on one thread (measured; the values agree to
# float32's rounding, the ranking's precision already: ``_pruned_ranking``).
BOUND_BLOCK = 1 << 18


class FitError(RuntimeError):
    """Neither a fit nor a previous set of hyperparameters gave a usable model."""


@dataclass
class FittedGP:
    model: SingleTaskGP
    hyper: Hyper
    fitted: bool  # False: hyperparameters reused without a fit (fallback or pending conditioning)


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
    if warm and warm_iter <= 0:  # reuse the previous hyperparameters as they are
        assert previous is not None
        model.eval()
        return FittedGP(model, previous, fitted=False)
    try:
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            options = {"maxiter": warm_iter if warm else cold_iter}
            # gpytorch's loss and its gradient in closed form, a quarter of the time (_mll)
            closure = loss_closure(mll) if supports(model) else None
            fit_gpytorch_mll(mll, closure=closure, optimizer_kwargs={"options": options})
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
        tx = model.train_inputs[0] if x is None else torch.as_tensor(x, dtype=torch.float64)
        ty = model.train_targets if y is None else torch.as_tensor(y, dtype=torch.float64)
        self._factor(kernel.lengthscale.detach().reshape(-1),
                     float(model.mean_module.constant.detach()),
                     float(model.likelihood.noise.detach().reshape(-1)[0]), tx, ty)

    @classmethod
    def of_values(cls, lengthscale: np.ndarray, const: float, noise: float, x: np.ndarray,
                  y: np.ndarray) -> Posterior:
        """The posterior of the same kernel with these hyperparameters (no BoTorch model):
        the prior-mean GP's residual (``_prior_model``)."""
        out = object.__new__(cls)
        out._factor(torch.as_tensor(lengthscale, dtype=torch.float64), float(const),
                    float(noise), torch.as_tensor(x, dtype=torch.float64),
                    torch.as_tensor(y, dtype=torch.float64))
        return out

    def _factor(self, lengthscale: torch.Tensor, const: float, noise: float,
                tx: torch.Tensor, ty: torch.Tensor) -> None:
        self._lengthscale = lengthscale
        self._const = const
        self._noise = noise
        self._x = tx.detach()
        self._y = ty.detach()
        with torch.no_grad(), one_torch_thread():
            k = self._k(self._x, self._x)
            k = k + (self._noise + 1e-8) * torch.eye(k.shape[0], dtype=k.dtype)
            self._chol = torch.linalg.cholesky(k)
            self._alpha = torch.cholesky_solve((self._y - self._const).unsqueeze(-1), self._chol)

    def condition_on_pending(self, fit: FittedGP | None, x_pending: np.ndarray) -> Posterior:
        if x_pending.shape[0] == 0:
            return self
        believed, _ = self.predict(x_pending)
        x = np.concatenate([self._x.numpy(), x_pending])
        y = np.concatenate([self._y.numpy(), believed])
        out = object.__new__(Posterior)
        out._factor(self._lengthscale, self._const, self._noise,
                    torch.as_tensor(x, dtype=torch.float64),
                    torch.as_tensor(y, dtype=torch.float64))
        return out

    def _k(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Matern-5/2 with the fitted length scales (unit output scale, as _build makes it)."""
        ls = self._lengthscale.to(a.dtype)
        return _matern52(_sq_dist(a / ls, b / ls))

    def predict(self, x: np.ndarray, chunk: int = SCORE_CHUNK) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of the latent function, chunk by chunk.

        float32 for the candidate blocks (the ranking of tens of thousands of
        candidates does not need float64; the factor itself is float64), and
        the explicit inverse of the Cholesky factor, so each chunk's variance
        is one matrix product instead of a triangular solve (twice as fast on
        one thread, measured).
        """
        means, stds = [np.zeros(0)], [np.zeros(0)]
        ls = self._lengthscale.float()
        with torch.no_grad(), one_torch_thread():
            train = self._x.float() / ls
            chol_inv_t = torch.linalg.solve_triangular(
                self._chol, torch.eye(self._chol.shape[0], dtype=self._chol.dtype), upper=False
            ).T.float()
            alpha = self._alpha.float()
            for start in range(0, x.shape[0], chunk):
                tx = torch.as_tensor(x[start : start + chunk], dtype=torch.float32) / ls
                kx = _matern52(_sq_dist(tx, train))
                means.append((self._const + kx @ alpha).squeeze(-1).double().numpy())
                v = kx @ chol_inv_t
                var = (1.0 - (v * v).sum(1)).clamp_min(1e-12)  # k(x, x) = 1
                stds.append(var.sqrt().double().numpy())
        return np.concatenate(means), np.concatenate(stds)

    def mean_and_bound(self, x: np.ndarray, chunk: int | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean, and an upper bound of the standard deviation, at a tenth of
        ``predict``'s cost at 1,000 trials: the std given only the nearest training
        point, sqrt(1 - k^2 / (1 + noise)), which is never below the std given all of
        them (conditioning on more points only lowers a GP's variance). The mean is
        ``predict``'s; ``std`` gives the exact std of the candidates that need it.
        ``chunk``: candidate rows per block (default: ``BOUND_BLOCK`` entries)."""
        if chunk is None:
            chunk = max(64, BOUND_BLOCK // max(1, self._x.shape[0]))
        means, bounds = [np.zeros(0)], [np.zeros(0)]
        ls = self._lengthscale.float()
        with torch.no_grad(), one_torch_thread():
            train = self._x.float() / ls
            alpha = self._alpha.float()
            for start in range(0, x.shape[0], chunk):
                tx = torch.as_tensor(x[start : start + chunk], dtype=torch.float32) / ls
                kx = _matern52(_sq_dist(tx, train))
                means.append((self._const + kx @ alpha).squeeze(-1).double().numpy())
                nearest = kx.max(dim=1).values.double().numpy()
                bounds.append(np.sqrt(np.clip(
                    1.0 - nearest * nearest / (1.0 + self._noise + 1e-8), 1e-12, 1.0)))
        return np.concatenate(means), np.concatenate(bounds)

    def std(self, x: np.ndarray) -> np.ndarray:
        """The exact posterior standard deviation at a few hundred ``x``: one triangular
        solve against the float32 factor (``predict``'s explicit inverse costs a cube of
        the trials, which pays only over tens of thousands of candidates)."""
        ls = self._lengthscale.float()
        with torch.no_grad(), one_torch_thread():
            if getattr(self, "_chol32", None) is None:
                self._chol32 = self._chol.float()
            train = self._x.float() / ls
            tx = torch.as_tensor(x, dtype=torch.float32) / ls
            kx = _matern52(_sq_dist(tx, train))
            v = torch.linalg.solve_triangular(self._chol32, kx.T, upper=False)
            var = (1.0 - (v * v).sum(0)).clamp_min(1e-12)
            return var.sqrt().double().numpy()


def _sq_dist(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Squared distances as one product of augmented matrices [a, |a|^2, 1] [-2b, 1, |b|^2]^T
    (a product with an inner size of d + 2 instead of d, plus two broadcast sums: 3x faster)."""
    ones_a = torch.ones(a.shape[0], 1, dtype=a.dtype)
    ones_b = torch.ones(b.shape[0], 1, dtype=b.dtype)
    aa = torch.cat([a, (a * a).sum(1, keepdim=True), ones_a], 1)
    bb = torch.cat([-2.0 * b, ones_b, (b * b).sum(1, keepdim=True)], 1)
    return (aa @ bb.T).clamp_min_(1e-30)


def _matern52(sq: torch.Tensor) -> torch.Tensor:
    """(1 + r + r^2/3) exp(-r), r = sqrt(5 sq); in place on ``sq`` (one block of memory)."""
    r = sq.sqrt_().mul_(math.sqrt(5.0))
    poly = r.div(3.0).add_(1.0).mul_(r).add_(1.0)
    return poly.mul_(r.neg_().exp_())
