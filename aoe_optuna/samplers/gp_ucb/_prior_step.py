"""One suggestion's model with a prior: the start-up design it leads, the GP it enters.

The sampler calls these in place of the space-filling design and the plain
GP when it has a prior (``GPUCBSampler(prior=...)``): ``prior_start`` picks a
start-up config, ``prior_model`` gives the posterior over the candidates,
and ``trust`` says how much the model follows the prior now (the run
summary shows it).

With the prior in the mean, the plain GP is fitted too (by the same loss,
the weight held at 0 and the scale at 1), and the prior's model is used
only where it explains the measurements better by more than its two extra
parameters can by chance: its maximised log posterior must exceed the
plain GP's by ``log(n)`` (the Bayesian information criterion's price of two
parameters). A prior that knows nothing (a recording's values shuffled over
its configs) then leaves the search to the plain GP, which is what "a
misleading prior loses its weight" asks; one that knows the landscape
passes from the first few measurements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr
from scipy.stats import spearmanr

from aoe_optuna.samplers.gp_ucb._candidates import Candidates
from aoe_optuna.samplers.gp_ucb._design import farthest_point
from aoe_optuna.samplers.gp_ucb._model import FittedGP, Posterior, fit_gp
from aoe_optuna.samplers.gp_ucb._prior_model import (
    PriorHyper,
    PriorPosterior,
    fit_prior_gp,
    loss_at,
)
from aoe_optuna.samplers.gp_ucb._pruned_ranking import CandidateModel


def prior_start(cands: Candidates, f_cands: np.ndarray, used_x: np.ndarray,
                f_used: np.ndarray, top_share: float, rng: np.random.Generator) -> int:
    """The prior's best candidate while none of the configs used is among the
    ``top_share`` it ranks best; then the farthest-point design over that share."""
    threshold = float(np.quantile(f_cands, 1.0 - top_share)) if f_cands.size else 0.0
    if not (f_used >= threshold).any():
        return int(np.argmax(f_cands))
    top = np.flatnonzero(f_cands >= threshold)
    pick = farthest_point(Candidates(cands.rows[top], cands.x[top]), used_x, rng)
    return int(top[pick])


@dataclass
class PriorModel:
    """The posterior over the candidates, the hyperparameters to store, the trust."""

    candidates: CandidateModel
    stored: Any  # the trial's GP_HYPER_ATTR: the feature model's (the mean's: unchanged)
    weight: float | None  # the prior's weight in the mean (0: the plain GP was kept)
    scale: float | None = None
    prior_hyper: dict[str, Any] | None = None  # {"plain": ..., "prior": ...}, as stored
    gain: float | None = None  # its log posterior over the plain GP's, less log(n)


def plain_candidates(fit: FittedGP, x_pending: np.ndarray, x_cands: np.ndarray
                     ) -> CandidateModel:
    """The plain GP's posterior over the candidates (pending configs believed)."""
    post = Posterior(fit).condition_on_pending(fit, x_pending)
    return CandidateModel(lambda: post.predict(x_cands), lambda: post.mean_and_bound(x_cands),
                          lambda idx: post.std(x_cands[idx]))


def prior_model(mechanism: str, x: np.ndarray, f: np.ndarray, y: np.ndarray,
                x_pending: np.ndarray, f_pending: np.ndarray, x_cands: np.ndarray,
                f_cands: np.ndarray, previous: Any, previous_prior: Any, warm_iter: int,
                cold_iter: int) -> PriorModel:
    """Fit the GP with the prior (``mechanism``: "mean" or "feature") and give the
    posterior over the candidates. ``previous``: the last stored plain hyperparameters;
    ``previous_prior``: the last prior-mean GP's."""
    if mechanism == "feature":
        def with_f(a: np.ndarray, fa: np.ndarray) -> np.ndarray:
            return np.concatenate([a, ndtr(fa)[:, None]], axis=1)

        fit = fit_gp(with_f(x, f), y, previous, warm_iter, cold_iter)
        return PriorModel(plain_candidates(fit, with_f(x_pending, f_pending),
                                           with_f(x_cands, f_cands)), fit.hyper, None)
    if mechanism != "mean":
        raise ValueError(f"mechanism: expected 'mean' or 'feature', got {mechanism!r}")
    stored = previous_prior if isinstance(previous_prior, dict) else {}
    start_plain = PriorHyper.from_stored(stored.get("plain"), x.shape[1])
    start = PriorHyper.from_stored(stored.get("prior"), x.shape[1])
    plain = fit_prior_gp(x, f, y, start_plain, cold_iter if start_plain is None else warm_iter,
                         plain=True)
    hyper = fit_prior_gp(x, f, y, start, cold_iter if start is None else warm_iter)
    gain = evidence_gain(x, f, y, plain, hyper)
    both = {"plain": plain.stored(), "prior": hyper.stored()}
    chosen = hyper if gain > 0 else plain
    post = PriorPosterior(chosen, x, f, y).condition_on_pending(x_pending)
    model = CandidateModel(lambda: post.predict(x_cands, f_cands),
                           lambda: post.mean_and_bound(x_cands, f_cands),
                           lambda idx: post.std(x_cands[idx]))
    return PriorModel(model, previous, chosen.weight, chosen.outputscale, both, gain)


def evidence_gain(x: np.ndarray, f: np.ndarray, y: np.ndarray, plain: PriorHyper,
                  hyper: PriorHyper) -> float:
    """The prior-mean GP's log posterior over the plain GP's (the same objective, the
    plain one at weight 0 and unit scale), less log(n) for its two extra parameters."""
    n = y.shape[0]
    return float(n * (loss_at(plain, x, f, y) - loss_at(hyper, x, f, y)) - math.log(max(n, 2)))


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
    if model.prior_hyper is not None:
        out["hyper"] = model.prior_hyper
    return out
