"""The samplers' options: keyword-only, checked at construction, one seed rule for both."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.samplers import GPUCBSampler, ReinforceSampler
from aoe_optuna.samplers.reinforce import LearnerSettings
from aoe_optuna.samplers.seeding import SEED_LIMIT, resolve_seed
from aoe_optuna.samplers.trial_rows import config_row
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace

SAMPLERS = (GPUCBSampler, ReinforceSampler)


def _space() -> SearchSpace:
    return SearchSpace([Param.generic("a", [1, 2, 4]), Param.generic("b", ["x", "y"])])


@pytest.mark.parametrize("cls", SAMPLERS)
def test_options_are_keyword_only(cls: type) -> None:
    with pytest.raises(TypeError):
        cls(_space())
    with pytest.raises(TypeError):
        cls(None, 3)


@pytest.mark.parametrize("cls", SAMPLERS)
@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_a_bad_seed_is_refused_by_name(cls: type, seed: object) -> None:
    with pytest.raises(ValueError, match=rf"{cls.__name__}: seed: expected a non-negative"):
        cls(space=_space(), seed=seed)


def test_fresh_seeds_differ_and_stay_below_the_limit() -> None:
    seeds = {resolve_seed(None, "x") for _ in range(20)}
    assert len(seeds) > 1 and all(0 <= s < SEED_LIMIT for s in seeds)
    assert resolve_seed(np.int64(7), "x") == 7 and isinstance(resolve_seed(np.int64(7), "x"), int)


@pytest.mark.parametrize("bad, message", [
    ({"target_transform": "rank"}, "target_transform: expected one of"),
    ({"beta_schedule": "linear"}, "beta_schedule: expected None or 'srinivas'"),
])
def test_gp_ucb_enumerations_are_checked(bad: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GPUCBSampler(space=_space(), **bad)


def test_learner_settings_as_object_or_mapping() -> None:
    as_object = ReinforceSampler(space=_space(), learner=LearnerSettings(batch_size=4, lr=0.1))
    as_mapping = ReinforceSampler(space=_space(), learner={"batch_size": 4, "lr": 0.1})
    assert as_object._settings == as_mapping._settings == LearnerSettings(batch_size=4, lr=0.1)
    assert isinstance(ReinforceSampler(space=_space(), learner={"batch_size": 4.0})
                      ._settings.batch_size, int)


@pytest.mark.parametrize("learner, error, message", [
    ({"batch": 4}, TypeError, r"unknown settings \['batch'\]"),
    ({"batch_size": 2.5}, ValueError, r"learner.batch_size: expected int, got 2.5"),
    ({"lr": "fast"}, ValueError, r"learner.lr: expected float"),
    ([("lr", 0.1)], TypeError, "expected LearnerSettings or a mapping"),
])
def test_bad_learner_settings_are_refused(learner: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        ReinforceSampler(space=_space(), learner=learner)


def test_config_row_is_none_for_configs_of_another_space() -> None:
    space = _space()
    assert config_row(space, {"a": 4, "b": "y"}).tolist() == [2, 1]
    assert config_row(space, {"a": 3, "b": "y"}) is None  # not a choice
    assert config_row(space, {"a": 4}) is None  # a parameter missing
    assert config_row(space, {"a": [4], "b": "y"}) is None  # unhashable
