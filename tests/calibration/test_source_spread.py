"""The random-effects model of the sources' offsets: its estimators and its predictive band."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aoe_optuna.calibration.source_spread import (
    Between,
    abs_error_quantile,
    between,
    fit_spread,
    pooled_between,
    within,
)


def test_within_pools_each_source_around_its_own_mean() -> None:
    groups = [[0.0, 0.2], [1.0, 1.4, 1.2]]  # deviations 0.1, 0.1 | 0.2, 0.2, 0
    sigma2, df = within(groups)
    assert df == 3 and sigma2 == pytest.approx((0.01 + 0.01 + 0.04 + 0.04) / 3)
    assert within([[0.3], [0.5]]) == (0.0, 0)  # one figure a source: nothing within


def test_between_is_the_anova_moment_estimate_and_never_negative() -> None:
    groups = [[0.0, 0.2], [1.0, 1.4, 1.2]]
    sigma2, _ = within(groups)
    n, means = np.array([2.0, 3.0]), np.array([0.1, 1.2])
    grand = float(np.sum(n * means) / 5)
    msb = float(np.sum(n * (means - grand) ** 2))
    n0 = 5 - 13 / 5
    assert between(groups, sigma2) == Between(pytest.approx((msb - sigma2) / n0), 1)
    agree = [[0.0, 0.2], [0.0, 0.2]]  # sources that agree: no spread, not a negative one
    assert between(agree, within(agree)[0]) == Between(0.0, 1)
    assert between([[0.1, 0.2]], 0.01) == Between(0.0, 0)


def test_the_pool_adds_degrees_of_freedom_and_skips_one_source_kinds() -> None:
    a = [[0.0, 0.1], [0.5, 0.6], [0.2, 0.3]]
    b = [[0.0, 0.0], [0.4, 0.4]]
    pooled = pooled_between([a, b, [[9.0, 9.1]]])
    ea, eb = between(a, within(a)[0]), between(b, within(b)[0])
    assert pooled.df == 3
    assert pooled.tau2 == pytest.approx((2 * ea.tau2 + eb.tau2) / 3)


def test_one_source_counts_its_own_offset_as_unknown() -> None:
    """With one source its mean is one draw of the offset: Var(mu) = tau^2 + sigma^2/n,
    so the predictive variance is about twice tau^2 plus sigma^2."""
    fit = fit_spread([[0.1, 0.12, 0.08]], Between(0.04, 5))
    assert fit.sources == 1 and fit.df == 5
    assert fit.var_mu == pytest.approx(0.04 + fit.sigma2 / 3)
    assert fit.scale**2 == pytest.approx(2 * 0.04 + fit.sigma2 * (1 + 1 / 3))


def test_a_kinds_own_spread_wins_where_it_is_wider_than_the_pool() -> None:
    groups = [[0.0, 0.01], [0.8, 0.81]]
    assert fit_spread(groups, Between(0.001, 9)).tau2 > 0.1
    assert fit_spread([[0.0, 0.01], [0.0, 0.01]], Between(0.05, 9)).tau2 == 0.05


def test_the_quantile_solves_the_coverage_of_the_ratio_band() -> None:
    fit = fit_spread([[0.0, 0.1], [0.2, 0.3], [-0.1, 0.0]], Between(0.0, 0))
    h = abs_error_quantile(fit, 0.8)
    inside = fit.cdf(math.log(1 + h)) - fit.cdf(math.log(1 - h))
    assert inside == pytest.approx(0.8, abs=1e-5)
    assert abs_error_quantile(fit, 0.5) < h


def test_the_band_covers_80_percent_of_new_sources_drawn_from_the_model() -> None:
    """Draw kinds of 4 sources from the model itself, take the band from them, and count
    the figures of a fifth, new source inside it: about 80% over many draws (the t's
    degrees of freedom pay for the few sources), where the 80th percentile of the pooled
    figures' own errors covers far fewer once sources disagree."""
    rng = np.random.default_rng(0)
    tau, sigma = 0.2, 0.08
    inside = naive = total = 0
    for _ in range(150):
        offsets = rng.normal(0.0, tau, 5)
        groups = [list(o + rng.normal(0.0, sigma, 6)) for o in offsets]
        seen, new = groups[:4], np.array(groups[4])
        h = abs_error_quantile(fit_spread(seen, Between(0.0, 0)), 0.8)
        err = np.abs(np.exp(new) - 1)
        inside += int(np.sum(err <= h))
        naive += int(np.sum(err <= np.quantile(np.abs(np.exp(np.concatenate(seen)) - 1), 0.8)))
        total += len(new)
    assert 0.75 < inside / total < 0.92
    assert naive / total < inside / total - 0.05
