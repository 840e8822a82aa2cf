"""The space-filling start with a prior: every other proposal drawn from the configs the
prior ranks best."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from gp_ucb_fixtures import run, small_space, throughput

from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.samplers.gp_ucb._prior_step import prior_design_pool

optuna.logging.set_verbosity(optuna.logging.ERROR)


def test_the_pool_is_the_priors_best_share_for_every_other_proposal() -> None:
    f = np.arange(100.0)
    for n_used in (1, 3, 5):
        assert sorted(prior_design_pool(f, 0.1, n_used)) == list(range(90, 100))
    for n_used in (2, 4):  # the others: every candidate
        assert prior_design_pool(f, 0.1, n_used) is None
    assert prior_design_pool(f, 1.0, 1) is None  # the plain start
    assert prior_design_pool(None, 0.1, 1) is None  # no prior


def test_a_shuffled_priors_pool_spans_the_space_as_the_whole_does() -> None:
    """A prior that knows nothing draws a random tenth: as spread over each input as
    the candidates are, so its design is still space-filling."""
    rng = np.random.default_rng(0)
    x = rng.random((5000, 4))
    pool = prior_design_pool(rng.random(5000), 0.1, 1)
    assert pool.size == 500
    assert np.allclose(x[pool].min(0), 0.0, atol=0.02)
    assert np.allclose(x[pool].max(0), 1.0, atol=0.02)
    assert np.allclose(x[pool].std(0), x.std(0), rtol=0.1)


def _design(share: float, seed: int) -> list[float]:
    """The true values of the start's proposals 2 and 4 (after 1 and 3 configs used)."""
    space = small_space()
    sampler = GPUCBSampler(space=space, seed=seed, prior=throughput,
                           prior_settings={"design_share": share})
    study = optuna.create_study(direction="maximize", sampler=sampler)
    asked = run(study, space, 5)  # the prior's best, then 4 of the start
    return [throughput(asked[i]) for i in (1, 3)]


def test_with_a_prior_every_other_start_proposal_is_one_it_ranks_best() -> None:
    values = sorted(throughput(small_space().config(r))
                    for r in small_space().all_feasible())
    top_tenth = values[int(0.9 * len(values))]
    for seed in range(3):
        assert min(_design(0.1, seed)) >= top_tenth
    assert min(min(_design(1.0, seed)) for seed in range(3)) < top_tenth  # from all


def test_a_bad_design_share_names_the_field() -> None:
    with pytest.raises(ValueError, match="prior_settings.design_share"):
        GPUCBSampler(space=small_space(), prior_settings={"design_share": 0})
