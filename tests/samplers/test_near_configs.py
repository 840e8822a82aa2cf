"""A prior from configs that won elsewhere: nearness to them, the nearer problem first."""

from __future__ import annotations

import numpy as np
import pytest
from gp_ucb_fixtures import small_space

from aoe_optuna.samplers.gp_ucb._prior_step import prior_first
from aoe_optuna.samplers.priors.near_configs import Anchor, NearConfigsPrior
from aoe_optuna.samplers.priors.table import TableError


def test_the_nearest_problems_winner_ranks_first_then_its_neighbours() -> None:
    space = small_space()
    rows = space.all_feasible()
    here, there = space.configs(rows[[3, len(rows) - 4]])
    prior = NearConfigsPrior("kb", [Anchor(there, 1.0), Anchor(here, 0.0)])
    got = prior.predict(space, rows)
    assert int(np.argmax(got)) == 3 and got[3] == pytest.approx(0.0)
    assert got[len(rows) - 4] == pytest.approx(-1.0)  # the farther winner: set back
    x = space.encode(rows)
    near_here = ((x - x[3]) ** 2).sum(1)
    # away from both winners a config ranks by its distance to the nearest
    np.testing.assert_allclose(-got, np.minimum(near_here, ((x - x[-4]) ** 2).sum(1) + 1.0),
                               atol=1e-9)


def test_configs_the_space_does_not_hold_are_left_out_and_none_is_refused() -> None:
    space = small_space()
    rows = space.all_feasible()
    good = space.configs(rows[:1])[0]
    prior = NearConfigsPrior("kb", [Anchor({**good, "a": 10**6}, 0.0), Anchor(good, 0.5)])
    assert prior.noted_rows(space).tolist() == [rows[0].tolist()]
    with pytest.raises(TableError, match="holds none"):
        NearConfigsPrior("kb", [Anchor({"zz": 1}, 0.0)]).predict(space, rows[:2])


def test_a_named_config_is_measured_first_until_one_as_good_was() -> None:
    f = np.array([-2.0, 0.0, -1.0])
    assert prior_first(f, np.array([0.5]), 0.1) is None  # a used config in the top share
    assert prior_first(f, np.array([-0.5]), 0.1, named=True) == 1
    assert prior_first(f, np.array([0.0]), 0.1, named=True) is None
