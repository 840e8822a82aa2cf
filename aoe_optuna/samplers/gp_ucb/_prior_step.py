"""One suggestion with a prior: its first proposal, and the GP it enters where it earns it.

The sampler calls these when it has a prior (``GPUCBSampler(prior=...)``):
``prior_first`` proposes the prior's best config first; ``prior_in_mean``
fits the GP with the prior in its mean and says whether it is used;
``prior_as_input`` is the other mechanism measured (the prior as one more
GP input); ``trust`` is what the run summary says of the prior.

Where the prior is not used, the search is exactly the plain sampler's: its
space-filling start, its GP, its stored hyperparameters. The prior-mean GP
is used only where two tests, taken afresh at every suggestion from
``PRIOR_EVIDENCE_FROM`` measurements on (the start-up design included), both
pass:

- it explains the measurements better than the plain GP (fitted as always)
  by more than its two extra parameters can by chance: its maximised log
  posterior, by the same loss, exceeds the plain GP's by
  ``EVIDENCE_PRICE * log(n)``;
- the prior's own term pays: the log posterior exceeds that of the same
  model with its weight held at 0 (its output scale still fitted) by
  ``TERM_PRICE * log(n)``. The first test alone also rewards the output
  scale, which the plain GP holds at 1: at 50-64 measurements of the RTX 3060
  GEMM, a shuffled prior (rank correlation 0.10-0.18 with the measurements)
  passed it by 0.4-1.9 while its scale sat at 0.55-0.65, and steered the
  search.

A prior that knows nothing (a recording's values shuffled over its configs)
passes the second test in 8% of fits at 5 measurements and in none at 8,
20 and 40 (1 of 12 at 12), and both tests in at most 8% at 5 and none from 8; the
true prior passes both in 83% at 5 and in all from 8 (random designs on the
RTX 3060 GEMM with the 2080 Ti's recording, 12 draws each). A prior that
knows the landscape ends the design after a few configs; one that knows
nothing leaves the run to the plain sampler, and one that seemed to know
something on the first few measurements loses its place as more arrive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr
from scipy.stats import spearmanr

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
TERM_PRICE = 1.0  # times log(n): what the prior's term must gain over weight 0


def prior_first(f_cands: np.ndarray, f_used: np.ndarray, top_share: float) -> int | None:
    """The candidate the prior ranks best, while none of the configs used is among the
    ``top_share`` of candidates it ranks best (else None)."""
    if f_cands.size == 0:
        return None
    threshold = float(np.quantile(f_cands, 1.0 - top_share))
    if (f_used >= threshold).any():
        return None
    return int(np.argmax(f_cands))


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
    gain: float | None = None  # its log posterior over the plain GP's, less the price
    null_hyper: dict[str, Any] | None = None  # the same GP's at weight 0, as stored
    term_gain: float | None = None  # its log posterior over weight 0's, less the price


def prior_in_mean(plain: FittedGP, x: np.ndarray, f: np.ndarray, y: np.ndarray,
                  x_pending: np.ndarray, x_cands: np.ndarray, f_cands: np.ndarray,
                  previous_prior: Any, warm_iter: int, cold_iter: int) -> PriorModel:
    """Fit the GP with the prior in its mean and the same GP at weight 0 (each
    warm-started from ``previous_prior``, the record ``trust`` stored last), and weigh
    the first against the ``plain`` GP fitted for the same suggestion and against the
    second (the module's docstring)."""
    record = previous_prior if isinstance(previous_prior, dict) else {}
    dims = x.shape[1]
    start = PriorHyper.from_stored(record.get("hyper"), dims)
    hyper = fit_prior_gp(x, f, y, start, cold_iter if start is None else warm_iter)
    null_start = PriorHyper.from_stored(record.get("hyper_without_prior"), dims)
    null = fit_prior_gp(x, f, y, null_start if null_start is not None else hyper,
                        cold_iter if null_start is None else warm_iter, without_prior=True)
    gain = evidence_gain(x, f, y, plain, hyper)
    term_gain = prior_term_gain(x, f, y, null, hyper)
    post = PriorPosterior(hyper, x, f, y).condition_on_pending(x_pending)
    model = CandidateModel(lambda: post.predict(x_cands, f_cands),
                           lambda: post.mean_and_bound(x_cands, f_cands),
                           lambda idx: post.std(x_cands[idx]))
    in_use = gain > 0 and term_gain > 0
    return PriorModel(model, plain.hyper, in_use, hyper.weight if in_use else 0.0,
                      hyper.outputscale, hyper.stored(), gain, null.stored(), term_gain)


def prior_term_gain(x: np.ndarray, f: np.ndarray, y: np.ndarray, null: PriorHyper,
                    hyper: PriorHyper) -> float:
    """The prior-mean GP's log posterior over the same GP's at weight 0 (``null``, its
    scale fitted), less ``TERM_PRICE * log(n)`` for the weight."""
    n = y.shape[0]
    null_loss = min(loss_at(null, x, f, y),
                    loss_at(PriorHyper(hyper.lengthscale, hyper.noise, hyper.outputscale,
                                       hyper.constant, 0.0), x, f, y))
    return float(n * (null_loss - loss_at(hyper, x, f, y)) - TERM_PRICE * math.log(max(n, 2)))


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
    if model.term_gain is not None:
        out["term_gain"] = round(model.term_gain, 3)
    if model.prior_hyper is not None:
        out["hyper"] = model.prior_hyper
    if model.null_hyper is not None:
        out["hyper_without_prior"] = model.null_hyper
    return out
