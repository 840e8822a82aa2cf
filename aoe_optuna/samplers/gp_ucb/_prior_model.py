"""The GP with a prior in its mean: m(x) = const + weight * f(x), fitted with the kernel.

``f`` is the prior's normal score (``_prior_scores``). The model is the
plain GP of ``_model`` (Matern-5/2 with a length scale per input column, the
same log-normal priors on length scales and noise) plus two things:

- the mean's ``weight`` on ``f`` (>= 0, at most ``MAX_WEIGHT``), fitted by
  marginal likelihood with everything else: where the measurements follow
  the prior it grows, where they do not (a misleading prior) it goes to 0
  and the model is the plain GP's;
- an output scale: what the prior explains, the kernel need not. With
  unit scale, as the plain GP has, UCB's exploration term would swamp the
  prior's guidance everywhere the study has not measured; with the scale
  fitted, the uncertainty left is what the prior leaves unexplained.

This is the multi-task model of the prior's source and the target when the
source is known everywhere: conditioning on a source that correlates at rho
leaves a residual of variance 1 - rho^2 around a mean rho * f. Fitting that
model with the source's own points would cost their number in the
factorisation; here the source is one column.

The loss and its gradient are in closed form as in ``_mll`` (one kernel block,
one Cholesky factor), minimised by L-BFGS-B over log length scales, log
noise, log output scale, the constant and the weight; a fit warm-starts from
the previous trial's values (stored in the trial, as the plain GP's are).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize

from aoe_optuna.samplers.blas_threads import one_blas_thread
from aoe_optuna.samplers.gp_ucb._mll import matern52
from aoe_optuna.samplers.gp_ucb._model import Posterior
from aoe_optuna.samplers.torch_threads import one_torch_thread

MAX_WEIGHT = 3.0
# BoTorch's priors for SingleTaskGP (as _model builds it): Hvarfner et al. (2024)
NOISE_LOC, NOISE_SCALE = -4.0, 1.0
LS_SCALE = math.sqrt(3.0)
OUTPUTSCALE_LOC, OUTPUTSCALE_SCALE = 0.0, 1.0  # median 1: the plain GP's unit scale
BOUNDS_LOG_LS = (math.log(2.5e-2), math.log(1e3))
BOUNDS_LOG_NOISE = (math.log(1e-4), math.log(10.0))
BOUNDS_LOG_SCALE = (math.log(1e-3), math.log(10.0))
NAMES = ("log_lengthscale", "log_noise", "log_outputscale", "constant", "weight")


def ls_loc(dims: int) -> float:
    """The length scales' log-normal location, scaled with the dimension (BoTorch's)."""
    return math.sqrt(2.0) + 0.5 * math.log(dims)


@dataclass(frozen=True)
class PriorHyper:
    """Fitted hyperparameters of the prior-mean GP."""

    lengthscale: np.ndarray  # (D,)
    noise: float
    outputscale: float
    constant: float
    weight: float

    def vector(self) -> np.ndarray:
        return np.concatenate([np.log(self.lengthscale),
                               [math.log(self.noise), math.log(self.outputscale),
                                self.constant, self.weight]])

    @classmethod
    def from_vector(cls, theta: np.ndarray) -> PriorHyper:
        d = theta.shape[0] - 4
        return cls(np.exp(theta[:d]), float(np.exp(theta[d])), float(np.exp(theta[d + 1])),
                   float(theta[d + 2]), float(theta[d + 3]))

    def stored(self) -> dict[str, list[float]]:
        """JSON-able, for the trial's system attribute."""
        v = self.vector()
        d = v.shape[0] - 4
        return {"log_lengthscale": [float(a) for a in v[:d]], "log_noise": [float(v[d])],
                "log_outputscale": [float(v[d + 1])], "constant": [float(v[d + 2])],
                "weight": [float(v[d + 3])]}

    @classmethod
    def from_stored(cls, stored: object, dims: int) -> PriorHyper | None:
        """The stored hyperparameters if they are this model's for ``dims`` inputs, else None."""
        if not isinstance(stored, dict) or set(stored) != set(NAMES):
            return None
        try:
            ls = [float(a) for a in stored["log_lengthscale"]]
            rest = [float(stored[k][0]) for k in NAMES[1:]]
        except (TypeError, ValueError, IndexError, KeyError):
            return None
        theta = np.array(ls + rest)
        if len(ls) != dims or not np.isfinite(theta).all():
            return None
        return cls.from_vector(theta)


def loss_at(hyper: PriorHyper, x: np.ndarray, f: np.ndarray, y: np.ndarray) -> float:
    """The fit's loss (the negative log posterior per point) at ``hyper``."""
    tx = torch.as_tensor(x, dtype=torch.float64)
    with one_torch_thread():
        return loss_and_gradient(hyper.vector(), tx - tx.mean(dim=0, keepdim=True),
                                 torch.as_tensor(f, dtype=torch.float64),
                                 torch.as_tensor(y, dtype=torch.float64))[0]


def initial(dims: int) -> PriorHyper:
    """A cold start: length scales and noise at their priors' modes, unit scale, half weight."""
    ls = math.exp(ls_loc(dims) - LS_SCALE**2)
    return PriorHyper(np.full(dims, ls), math.exp(NOISE_LOC - NOISE_SCALE**2), 1.0, 0.0, 0.5)


def _log_normal(v: torch.Tensor, loc: float, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """log density of LogNormal(loc, scale) at ``v`` and its derivative in ``v``."""
    lv = v.log()
    logp = (-((lv - loc) ** 2) / (2 * scale**2) - math.log(scale)
            - 0.5 * math.log(2 * math.pi) - lv)
    return logp, -(1.0 + (lv - loc) / scale**2) / v


def loss_and_gradient(theta: np.ndarray, x: torch.Tensor, f: torch.Tensor,
                      y: torch.Tensor) -> tuple[float, np.ndarray]:
    """-(log p(y | X, f, theta) + log p(theta)) / n and its gradient in ``theta``.

    With K = s M + noise I (M the unit Matern-5/2 block), r = y - c - w f,
    a = K^-1 r and W = K^-1 - a a^T: d/dnoise = tr(W)/2, d/ds = tr(W M)/2,
    d/dls as ``_mll`` (times s), d/dc = -sum(a), d/dw = -f.a; the log-normal
    priors on length scales, noise and scale add their derivatives.
    """
    n, d = x.shape
    t = torch.as_tensor(theta, dtype=torch.float64)
    ls, noise, scale = t[:d].exp(), t[d].exp(), t[d + 1].exp()
    c, w = t[d + 2], t[d + 3]
    m, rho, e = matern52(x / ls)
    k = m * scale
    k.diagonal().add_(noise)
    chol = torch.linalg.cholesky(k)
    r = (y - c - w * f).unsqueeze(-1)
    a = torch.cholesky_solve(r, chol)
    nll = 0.5 * (r * a).sum() + chol.diagonal().log().sum() + 0.5 * n * math.log(2 * math.pi)
    ls_logp, ls_dlogp = _log_normal(ls, ls_loc(d), LS_SCALE)
    noise_logp, noise_dlogp = _log_normal(noise, NOISE_LOC, NOISE_SCALE)
    scale_logp, scale_dlogp = _log_normal(scale, OUTPUTSCALE_LOC, OUTPUTSCALE_SCALE)
    value = (nll - ls_logp.sum() - noise_logp - scale_logp) / n
    wm = torch.cholesky_inverse(chol).sub_(a @ a.T)
    d_noise = 0.5 * wm.diagonal().sum() - noise_dlogp
    d_scale = 0.5 * (wm * m).sum() - scale_dlogp
    p = wm.mul_(rho.add_(1.0).mul_(e).mul_(scale * 5.0 / 3.0))
    dls = (p.sum(1) @ (x * x) - (x * (p @ x)).sum(0)) / ls**3 - ls_dlogp
    a = a.squeeze(-1)
    grad = torch.cat([dls * ls, (d_noise * noise).reshape(1), (d_scale * scale).reshape(1),
                      (-a.sum()).reshape(1), (-(f * a).sum()).reshape(1)]) / n
    return float(value), grad.numpy().astype(float)


def fit_prior_gp(x: np.ndarray, f: np.ndarray, y: np.ndarray,
                 previous: PriorHyper | None = None, max_iter: int = 100,
                 plain: bool = False) -> PriorHyper:
    """MAP hyperparameters by L-BFGS-B from ``previous`` (else a cold start). A fit that
    fails (a factorisation that breaks down) keeps the start. ``plain``: the weight held
    at 0 and the scale at 1, which is the plain GP of ``_model`` (the same kernel, mean,
    noise and priors), fitted by the same loss."""
    dims = x.shape[1]
    start = previous if previous is not None else initial(dims)
    if plain:
        start = PriorHyper(start.lengthscale, start.noise, 1.0, start.constant, 0.0)
    tx = torch.as_tensor(x, dtype=torch.float64)
    tx = tx - tx.mean(dim=0, keepdim=True)  # distances do not change; cancellation does
    tf = torch.as_tensor(f, dtype=torch.float64)
    ty = torch.as_tensor(y, dtype=torch.float64)
    fixed = (0.0, 0.0)
    bounds = ([BOUNDS_LOG_LS] * dims + [BOUNDS_LOG_NOISE, fixed if plain else BOUNDS_LOG_SCALE,
                                        (-5.0, 5.0), fixed if plain else (0.0, MAX_WEIGHT)])
    theta0 = np.clip(start.vector(), [b[0] for b in bounds], [b[1] for b in bounds])
    if max_iter <= 0:
        return PriorHyper.from_vector(theta0)
    with one_torch_thread(), one_blas_thread():  # L-BFGS-B's BLAS on tiny vectors
        try:
            result = minimize(loss_and_gradient, theta0, args=(tx, tf, ty), jac=True,
                              method="L-BFGS-B", bounds=bounds,
                              options={"maxiter": max_iter})
        except (RuntimeError, ValueError, torch.linalg.LinAlgError):
            return PriorHyper.from_vector(theta0)
    theta = result.x if np.isfinite(result.x).all() else theta0
    return PriorHyper.from_vector(theta)


class PriorPosterior:
    """The exact posterior of the prior-mean GP: the plain ``Posterior`` on the residual
    y - m(x) with noise / scale, its mean shifted by m and its std times sqrt(scale)."""

    def __init__(self, hyper: PriorHyper, x: np.ndarray, f: np.ndarray, y: np.ndarray):
        self.hyper = hyper
        self._residual = Posterior.of_values(
            hyper.lengthscale, 0.0, hyper.noise / hyper.outputscale, x, y - self.mean_of(f))

    def mean_of(self, f: np.ndarray) -> np.ndarray:
        return self.hyper.constant + self.hyper.weight * np.asarray(f, dtype=float)

    def condition_on_pending(self, x_pending: np.ndarray) -> PriorPosterior:
        """Pending configs observed at their posterior mean (the kriging believer)."""
        if x_pending.shape[0] == 0:
            return self
        out = object.__new__(PriorPosterior)
        out.hyper = self.hyper
        out._residual = self._residual.condition_on_pending(None, x_pending)
        return out

    def predict(self, x: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean, std = self._residual.predict(x)
        return self.mean_of(f) + mean, std * math.sqrt(self.hyper.outputscale)

    def mean_and_bound(self, x: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mean and an upper bound of the std (``Posterior.mean_and_bound``)."""
        mean, bound = self._residual.mean_and_bound(x)
        return self.mean_of(f) + mean, bound * math.sqrt(self.hyper.outputscale)

    def std(self, x: np.ndarray) -> np.ndarray:
        return self._residual.std(x) * math.sqrt(self.hyper.outputscale)
