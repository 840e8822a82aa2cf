"""How far a figure of a source the model never saw may land: a random-effects model of
the sources' offsets.

The held-out errors of one kernel kind are not independent draws: a source (one
author's way of timing one kernel: tool, host, warm or cold L2, a whole example or
the kernel alone) moves all its figures one way. So the log ratio of a figure i of
source s is modelled as

    log(simulated / published) = mu + b_s + e_si,   b_s ~ N(0, tau^2), e_si ~ N(0, sigma^2)

with ``tau^2`` the spread between sources and ``sigma^2`` the spread within one. A
figure of a new source then lands at ``mu + b_new + e_new``: its predictive
distribution has the variance ``tau^2 + sigma^2 + Var(mu_hat)``, and with few sources
its quantiles are a Student t's with the between-source degrees of freedom. A band
from two sources that agree is therefore still wide, and one from sources that
disagree wider.

Estimates (the one-way ANOVA moment estimators, which need no iteration and are
unbiased for unbalanced groups): ``sigma^2`` pools the squared deviations from each
source's mean; ``tau^2 = max(0, (MSB - sigma^2) / n0)``. The spread between timing
methods is a property of how kernels are timed more than of one model, so
:func:`pooled_between` pools ``tau^2`` over every kind with two sources or more (its
degrees of freedom add up); a kind's own ``tau^2`` is used where it is wider. A kind
with one source has no spread of its own to show: its own offset is one draw of
``b`` (``Var(mu_hat) = tau^2 + sigma^2 / n``), which is what makes its band wide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Groups = Sequence[Sequence[float]]  # log ratios, one sequence per source


@dataclass(frozen=True)
class Between:
    """The spread between sources and the degrees of freedom it rests on."""

    tau2: float
    df: int


@dataclass(frozen=True)
class SourceSpread:
    """A kind's fit: the mean log ratio, the spreads, and what they rest on."""

    mu: float
    tau2: float
    sigma2: float
    var_mu: float
    df: int  # the t predictive's degrees of freedom (between-source, at least 1)
    sources: int
    figures: int

    @property
    def scale(self) -> float:
        """The predictive standard deviation of a new source's figure (log ratio)."""
        return math.sqrt(self.tau2 + self.sigma2 + self.var_mu)

    def cdf(self, y: float) -> float:
        from scipy.special import stdtr  # Student t's CDF, at first use (scipy.stats is slow)

        return float(stdtr(self.df, (y - self.mu) / max(self.scale, 1e-12)))


def within(groups: Groups) -> tuple[float, int]:
    """The pooled within-source variance and its degrees of freedom (0, 0 when every
    source has one figure)."""
    ss = sum(float(np.sum((np.asarray(g) - np.mean(g)) ** 2)) for g in groups)
    df = sum(len(g) for g in groups) - len(groups)
    return (ss / df, df) if df > 0 else (0.0, 0)


def between(groups: Groups, sigma2: float) -> Between:
    """One kind's moment estimate of the between-source variance (``df`` 0 below two
    sources)."""
    g = len(groups)
    if g < 2:
        return Between(0.0, 0)
    n = np.array([len(x) for x in groups], dtype=float)
    means = np.array([np.mean(x) for x in groups])
    total = n.sum()
    grand = float(np.sum(n * means) / total)
    msb = float(np.sum(n * (means - grand) ** 2)) / (g - 1)
    n0 = (total - float(np.sum(n**2)) / total) / (g - 1)
    return Between(max(0.0, (msb - sigma2) / n0), g - 1)


def pooled_between(kinds: Sequence[Groups]) -> Between:
    """``tau^2`` pooled over kinds, each kind's estimate weighted by its degrees of
    freedom (kinds of one source add nothing)."""
    estimates = [between(groups, within(groups)[0]) for groups in kinds]
    df = sum(e.df for e in estimates)
    if df == 0:
        return Between(0.0, 0)
    return Between(sum(e.tau2 * e.df for e in estimates) / df, df)


def fit_spread(groups: Groups, pooled: Between) -> SourceSpread:
    """A kind's predictive fit from its sources' log ratios and the pooled spread
    between sources (the kind's own where that is wider)."""
    groups = [list(g) for g in groups if len(g)]
    if not groups:
        raise ValueError("fit_spread: expected at least one source with figures")
    sigma2, _ = within(groups)
    own = between(groups, sigma2)
    tau2 = max(own.tau2, pooled.tau2)
    df = max(pooled.df, own.df, 1)
    n = np.array([len(g) for g in groups], dtype=float)
    means = np.array([np.mean(g) for g in groups])
    weights = 1.0 / np.maximum(tau2 + sigma2 / n, 1e-12)
    mu = float(np.sum(weights * means) / np.sum(weights))
    var_mu = float(1.0 / np.sum(weights))
    return SourceSpread(mu, tau2, sigma2, var_mu, df, len(groups), int(n.sum()))


def abs_error_quantile(fit: SourceSpread, q: float) -> float:
    """The ``q`` quantile of ``|simulated / published - 1| = |exp(y) - 1|`` for a figure
    of a new source: the ``h`` with ``P(log(1 - h) < y < log(1 + h)) = q``."""
    from scipy.optimize import brentq  # here: a run that states no band skips its import

    def covered(h: float) -> float:
        low = fit.cdf(math.log(1.0 - h)) if h < 1.0 else 0.0
        return fit.cdf(math.log(1.0 + h)) - low - q

    high = 1.0
    while covered(high) < 0.0:
        high *= 2.0
        if high > 1e6:
            return math.inf
    return float(brentq(covered, 0.0, high, xtol=1e-6))
