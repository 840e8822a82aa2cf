"""One suggestion with a prior: its first proposal, and the GP it enters where it earns it.

The sampler calls these when it has a prior (``GPUCBSampler(prior=...)``):
``prior_first`` proposes the prior's best config first; ``prior_in_mean``
fits the GP with the prior in its mean and says whether it is used;
``prior_as_input`` is the other mechanism measured (the prior as one more
GP input); ``trust`` is what the run summary says of the prior.

``prior_design_pool`` is where the space-filling start draws every other
proposal while the prior is not trusted: among the configs it ranks best
(docs/decisions/0039-prior-guided-start.md). Otherwise, where the prior is not
used, the search is the plain sampler's: its space-filling start, its GP, its
stored hyperparameters. The prior-mean GP
is used only where it explains the measurements better than the plain GP
(fitted as always) by more than its two extra parameters can by chance: its
maximised log posterior, by the same loss, must exceed the plain GP's by
``EVIDENCE_PRICE * log(n)``. With the Bayesian information criterion's
price, log(n), a prior that knows nothing (a recording's values shuffled
over its configs) passed in 17-33% of fits at 3-5 measurements on the
recorded GEMM pair, and such a pass ends the space-filling design; at twice
that price and from 5 measurements on, 8% at 5 and 8 measurements and none
from 12, while the true prior passes in 42-83% of fits from 5 and 50-100%
from 12 (random designs, 12 draws each). From ``PRIOR_EVIDENCE_FROM``
measurements on, this is asked at every suggestion, the start-up design
included: a prior that knows the landscape ends the design after a few
configs, one that knows nothing leaves the run to the plain sampler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr

from aoe_optuna.samplers.gp_ucb._model import FittedGP, Posterior, fit_gp
from aoe_optuna.samplers.gp_ucb._prior_model import (
    PriorHyper,
    PriorPosterior,
    fit_prior_gp,
    loss_at,
)
from aoe_optuna.samplers.gp_ucb._pruned_ranking import CandidateModel

PRIOR_EVIDENCE_FROM = 5  # measurements before the prior's model can be chosen
EVIDENCE_PRICE = 2.0  # times log(n): the log posterior the prior's model must gain


def prior_first(f_cands: np.ndarray, f_used: np.ndarray, top_share: float,
                named: bool = False) -> int | None:
    """The candidate the prior ranks best, while none of the configs used is among the
    ``top_share`` of candidates it ranks best (else None). A prior that ``named`` its
    configs (a knowledge base's winners) has them measured first: its best candidate,
    while no config used scores as high."""
    if f_cands.size == 0:
        return None
    if named:
        best = int(np.argmax(f_cands))
        return None if f_used.size and float(f_used.max()) >= float(f_cands[best]) else best
    threshold = float(np.quantile(f_cands, 1.0 - top_share))
    if (f_used >= threshold).any():
        return None
    return int(np.argmax(f_cands))


def prior_design_pool(f_cands: np.ndarray | None, share: float,
                      n_used: int) -> np.ndarray | None:
    """Indices of the candidates the prior ranks among its best ``share``, where the
    space-filling start draws its proposal after ``n_used`` configs while the prior is
    not yet trusted; None: from all candidates.

    Every other proposal is drawn there (odd ``n_used``: the first one after the
    prior's best), the rest from all candidates. An informative prior's best share
    holds the configs worth a first look; a misleading one's is a random share of
    the space, as spread as the whole; one in between (devices whose rankings
    correlate at 0.75) may hold no config near the target's optimum, and the draws
    from all candidates keep the start's contrast for the GP to learn that from.
    """
    if f_cands is None or share >= 1.0 or f_cands.size == 0 or n_used % 2 == 0:
        return None
    keep = np.flatnonzero(f_cands >= np.quantile(f_cands, 1.0 - share))
    return keep if keep.size else None


@dataclass
class PriorModel:
    """The prior's model of one suggestion: its posterior over the candidates, whether
    it is used, and what the run summary says of it."""

    candidates: CandidateModel
    stored: Any  # the trial's GP_HYPER_ATTR when it is used (the feature model's)
    in_use: bool
    weight: float | None  # the prior's weight in the mean (None: the prior is an input)
    scale: float | None = None
    prior_hyper: dict[str, Any] | None = None  # the prior-mean GP's, as stored
    gain: float | None = None  # its log posterior over the plain GP's, less log(n)


def prior_in_mean(plain: FittedGP, x: np.ndarray, f: np.ndarray, y: np.ndarray,
                  x_pending: np.ndarray, x_cands: np.ndarray, f_cands: np.ndarray,
                  previous_prior: Any, warm_iter: int, cold_iter: int) -> PriorModel:
    """Fit the GP with the prior in its mean (warm-started from ``previous_prior``) and
    weigh it against the ``plain`` GP fitted for the same suggestion."""
    start = PriorHyper.from_stored(previous_prior, x.shape[1])
    hyper = fit_prior_gp(x, f, y, start, cold_iter if start is None else warm_iter)
    gain = evidence_gain(x, f, y, plain, hyper)
    post = PriorPosterior(hyper, x, f, y).condition_on_pending(x_pending)
    model = CandidateModel(lambda: post.predict(x_cands, f_cands),
                           lambda: post.mean_and_bound(x_cands, f_cands),
                           lambda idx: post.std(x_cands[idx]))
    in_use = gain > 0
    return PriorModel(model, plain.hyper, in_use, hyper.weight if in_use else 0.0,
                      hyper.outputscale, hyper.stored(), gain)


def evidence_gain(x: np.ndarray, f: np.ndarray, y: np.ndarray, plain: FittedGP,
                  hyper: PriorHyper) -> float:
    """The prior-mean GP's log posterior over the plain GP's (the same loss: the plain GP
    is the prior-mean one at weight 0 and unit scale), less ``EVIDENCE_PRICE * log(n)``
    for its two extra parameters."""
    n = y.shape[0]
    p = plain.hyper
    as_prior = PriorHyper(np.asarray(p["covar_module.raw_lengthscale"], dtype=float),
                          max(float(p["likelihood.noise_covar.raw_noise"][0]), 1e-6), 1.0,
                          float(p["mean_module.raw_constant"][0]), 0.0)
    return float(n * (loss_at(as_prior, x, f, y) - loss_at(hyper, x, f, y))
                 - EVIDENCE_PRICE * math.log(max(n, 2)))


def prior_as_input(x: np.ndarray, f: np.ndarray, y: np.ndarray, x_pending: np.ndarray,
                   f_pending: np.ndarray, x_cands: np.ndarray, f_cands: np.ndarray,
                   previous: Any, warm_iter: int, cold_iter: int) -> PriorModel:
    """The other mechanism: the prior's quantile as one more GP input, its length scale
    fitted with the others (``PriorSettings(mechanism="feature")``)."""
    def with_f(a: np.ndarray, fa: np.ndarray) -> np.ndarray:
        return np.concatenate([a, ndtr(fa)[:, None]], axis=1)

    fit = fit_gp(with_f(x, f), y, previous, warm_iter, cold_iter)
    post = Posterior(fit).condition_on_pending(fit, with_f(x_pending, f_pending))
    xf = with_f(x_cands, f_cands)
    model = CandidateModel(lambda: post.predict(xf), lambda: post.mean_and_bound(xf),
                           lambda idx: post.std(xf[idx]))
    return PriorModel(model, fit.hyper, True, None)


def trust(name: str, f: np.ndarray, y: np.ndarray, model: PriorModel) -> dict[str, Any]:
    """What the run summary says of the prior: its weight in the mean (0 while the plain
    GP explains the measurements as well), the rank correlation of its scores with the
    measured values so far; and the prior-mean GP's hyperparameters (the next fit's
    start)."""
    from scipy.stats import spearmanr  # here: scipy.stats costs every process ~1 s to import

    corr = float(spearmanr(f, y).statistic) if f.shape[0] >= 3 and np.ptp(f) > 0 else None
    out: dict[str, Any] = {"name": name, "measured": int(f.shape[0]),
                           "mechanism": "mean" if model.weight is not None else "feature"}
    if corr is not None and np.isfinite(corr):
        out["correlation"] = round(corr, 4)
    if model.weight is not None:
        out["weight"] = round(model.weight, 4)
    if model.scale is not None:
        out["residual_scale"] = round(model.scale, 4)
    if model.gain is not None:
        out["evidence_gain"] = round(model.gain, 3)
    if model.prior_hyper is not None:
        out["hyper"] = model.prior_hyper
    return out
