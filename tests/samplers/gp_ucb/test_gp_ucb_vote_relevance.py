"""The failure vote's per-dimension scales: what they learn, and that they never fit worse."""

from __future__ import annotations

import numpy as np

from aoe_optuna.samplers.gp_ucb._feasibility import FeasibilityModel
from aoe_optuna.samplers.gp_ucb._vote_relevance import (
    _fit_subset,
    fit_inverse_scales,
    loo_log_likelihood,
)


def _region_space(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Configs of 6 parameters on 5 levels each ([0, 1] encoded); a config fails when
    parameter 0 (a tile size) is at level 1 AND parameter 1 (a width) at level 3,
    whatever the other four are: a region of the kind a build fails in."""
    x = rng.integers(0, 5, (n, 6)) / 4.0
    ok = ~((x[:, 0] == 0.25) & (x[:, 1] == 0.75))
    return x, ok


def test_loo_log_likelihood_is_the_sum_over_left_out_configs() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((12, 3))
    ok = (rng.random(12) > 0.3).astype(float)
    sq = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1) / 0.3**2
    expected = 0.0
    for i in range(12):
        others = np.arange(12) != i
        w = np.exp(-0.5 * sq[i, others])
        p = (0.8 + w @ ok[others]) / (2.0 + w.sum())
        expected += np.log(p) if ok[i] else np.log1p(-p)
    assert np.isclose(loo_log_likelihood(sq, ok, 0.8, 1.2), expected)


def test_scales_keep_the_dimensions_the_failures_depend_on() -> None:
    rng = np.random.default_rng(1)
    x, ok = _region_space(rng, 400)
    x = np.concatenate([x, np.tile([[0.25, 0.75, 0, 0, 0, 0]], (6, 1)) + [0, 0, 0, .25, .5, 1]])
    ok = np.concatenate([ok, np.zeros(6, dtype=bool)]).astype(float)
    inv = fit_inverse_scales(x, ok, 1.0, 0.9, 1.1)
    assert inv[0] > 1.0 and inv[1] > 1.0  # the tile and the width decide
    assert (inv[2:] < inv[:2].min()).all()  # the others matter less


def test_fit_is_never_worse_than_its_start() -> None:
    rng = np.random.default_rng(2)
    x, ok = _region_space(rng, 150)
    okf = ok.astype(float)
    start = 2.0
    sq = lambda inv: (((x[:, None, :] - x[None, :, :]) * inv) ** 2).sum(-1)  # noqa: E731
    inv = fit_inverse_scales(x, okf, start, 1.0, 1.0)
    before = loo_log_likelihood(sq(np.full(6, start)), okf, 1.0, 1.0)
    after = loo_log_likelihood(sq(inv), okf, 1.0, 1.0)
    assert after >= before


def test_a_failed_region_warns_configs_that_differ_elsewhere() -> None:
    """Unseen configs of the failing tile x width pair, other parameters anywhere:
    the vote rates them failing, and the configs outside the region succeeding."""
    rng = np.random.default_rng(3)
    train_x, train_ok = _region_space(rng, 300)
    test_x, test_ok = _region_space(np.random.default_rng(4), 3000)
    model = FeasibilityModel.fit(train_x[train_ok], train_x[~train_ok])
    assert model is not None
    p = model.predict(test_x)
    assert p[~test_ok].mean() < 0.3
    assert p[test_ok].mean() > 0.9


def test_a_long_study_fits_on_a_subset_that_keeps_every_failure() -> None:
    rng = np.random.default_rng(5)
    x, ok = _region_space(rng, 2000)
    sub_x, sub_ok = _fit_subset(x, ok.astype(float), 300)
    assert sub_x.shape == (300, 6)
    assert (sub_ok == 0).sum() == (~ok).sum()
    inv = fit_inverse_scales(x, ok.astype(float), 1.0, 0.9, 1.1)
    assert inv[0] > 1.0 and inv[1] > 1.0 and (inv[2:] < inv[:2].min()).all()
