"""Priors from measured configs and functions, and the normal scores the GP takes."""

from __future__ import annotations

import numpy as np
import pytest
from gp_ucb_fixtures import small_space, throughput

from aoe_optuna.samplers.gp_ucb._prior_scores import PriorScores
from aoe_optuna.samplers.priors import CallablePrior, TablePrior, as_prior
from aoe_optuna.samplers.priors.table import TableError, shuffled


def _table(space, rows, fail_first: bool = False) -> TablePrior:
    configs = space.configs(rows)
    values = [throughput(c) for c in configs]
    if fail_first:
        values[0] = float("nan")
    return TablePrior("t", configs, values)


def test_a_table_answers_its_configs_and_the_rest_from_their_neighbours() -> None:
    space = small_space()
    rows = space.all_feasible()
    table = _table(space, rows[::2], fail_first=True)
    got = table.predict(space, rows)
    truth = np.array([throughput(c) for c in space.configs(rows)])
    assert np.isneginf(got[0])  # failed there: predicted to fail
    np.testing.assert_allclose(got[2::2], truth[2::2])  # measured: as measured
    unmeasured = got[1::2]
    assert np.isfinite(unmeasured[1:]).all()
    corr = np.corrcoef(unmeasured[1:], truth[1::2][1:])[0, 1]
    assert corr > 0.8  # a smooth objective: neighbours predict it


def test_a_table_without_the_spaces_parameters_is_refused() -> None:
    space = small_space()
    table = TablePrior("other", [{"a": 1, "b": 2}], [1.0])
    with pytest.raises(TableError, match="lacks"):
        table.predict(space, space.all_feasible()[:3])


def test_shuffled_keeps_the_values_and_loses_their_places() -> None:
    space = small_space()
    table = _table(space, space.all_feasible())
    mixed = shuffled(table, seed=1)
    assert sorted(mixed.values) == sorted(table.values)
    assert abs(np.corrcoef(mixed.values, table.values)[0, 1]) < 0.2


def test_a_function_of_a_config_is_a_prior() -> None:
    space = small_space()
    prior = as_prior(throughput)
    assert isinstance(prior, CallablePrior) and prior.name == "throughput"
    rows = space.all_feasible()[:5]
    np.testing.assert_allclose(prior.predict(space, rows),
                               [throughput(c) for c in space.configs(rows)])
    with pytest.raises(TypeError, match="prior"):
        as_prior(3)  # type: ignore[arg-type]


def test_scores_are_normal_scores_of_the_rank_whatever_the_units() -> None:
    space = small_space()
    rows = space.all_feasible()
    plain = PriorScores(as_prior(throughput), space, True, rows)
    cubed = PriorScores(as_prior(lambda c: throughput(c) ** 3), space, True, rows)
    s = plain(rows)
    np.testing.assert_allclose(s, cubed(rows))
    assert abs(s.mean()) < 0.01 and 0.9 < s.std() < 1.05  # ties share their mid rank
    best = int(np.argmax([throughput(c) for c in space.configs(rows)]))
    assert s[best] == s.max()
    flipped = PriorScores(as_prior(throughput), space, False, rows)
    np.testing.assert_allclose(flipped(rows), -s, atol=1e-12)  # a minimised study


def test_no_guess_scores_the_median_and_a_predicted_failure_the_lowest() -> None:
    space = small_space()
    rows = space.all_feasible()

    def guess(config):
        if config["mode"] == "z":
            return None
        return float("-inf") if config["c"] == 32 else throughput(config)

    s = PriorScores(as_prior(guess), space, True, rows)(rows)
    modes = np.array([c["mode"] for c in space.configs(rows)])
    cs = np.array([c["c"] for c in space.configs(rows)])
    assert (s[modes == "z"] == 0).all()
    assert (s[(cs == 32) & (modes != "z")] == s.min()).all()


class _Counting:
    name = "counting"

    def __init__(self) -> None:
        self.asked = 0
        self.scale = 1.0

    def predict(self, space, rows):
        self.asked += rows.shape[0]
        return self.scale * np.array([throughput(c) for c in space.configs(rows)])

    def observe(self, space, rows, values) -> bool:
        self.scale = 2.0
        return True


def test_a_prior_is_asked_once_per_config_until_it_recalibrates() -> None:
    space = small_space()
    rows = space.all_feasible()
    prior = _Counting()
    scores = PriorScores(prior, space, True, rows)
    scores(rows)
    scores(rows[:10])
    assert prior.asked == rows.shape[0]
    scores.observe(rows[:3], np.ones(3))
    scores(rows[:10])
    assert prior.asked == 2 * rows.shape[0]  # the reference set again, then nothing new
