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
    ({"model": {"target_transform": "rank"}}, "model.target_transform: expected one of"),
    ({"search": {"beta_schedule": "linear"}},
     "search.beta_schedule: expected one of 'srinivas' or null, got 'linear'"),
    ({"search": {"pool_size": "big"}}, "search.pool_size: expected an integer, got 'big'"),
    ({"failures": "none"}, "failures.model: expected one of"),
])
def test_gp_ucb_enumerations_are_checked(bad: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GPUCBSampler(space=_space(), **bad)


@pytest.mark.parametrize("bad, error, message", [
    ({"search": {"local_patiense": 5}}, TypeError,
     r"GPUCBSampler: search: unknown settings \['local_patiense'\]; expected some of"),
    ({"model": 3}, TypeError, "GPUCBSampler: model: expected ModelSettings or a mapping"),
])
def test_gp_ucb_settings_keys_and_groups_are_checked(bad: dict, error: type,
                                                     message: str) -> None:
    with pytest.raises(error, match=message):
        GPUCBSampler(space=_space(), **bad)


def test_gp_ucb_settings_as_objects_or_mappings() -> None:
    from aoe_optuna.samplers.gp_ucb.settings import FailureModel, SearchSettings

    as_objects = GPUCBSampler(space=_space(), failures=FailureModel("vote", "gain"),
                              search=SearchSettings(local_patience=5))
    as_json = GPUCBSampler(space=_space(), failures={"model": "vote", "weighting": "gain"},
                           search={"local_patience": 5})
    assert (as_objects.failures, as_objects.search) == (as_json.failures, as_json.search)
    assert GPUCBSampler(space=_space(), failures="off").failures.resolve(False) is None


def test_learner_settings_as_object_or_mapping() -> None:
    as_object = ReinforceSampler(space=_space(), learner=LearnerSettings(batch_size=4, lr=0.1))
    as_mapping = ReinforceSampler(space=_space(), learner={"batch_size": 4, "lr": 0.1})
    assert as_object._settings == as_mapping._settings == LearnerSettings(batch_size=4, lr=0.1)
    assert isinstance(ReinforceSampler(space=_space(), learner={"batch_size": 4.0})
                      ._settings.batch_size, int)


@pytest.mark.parametrize("learner, error, message", [
    ({"batch": 4}, TypeError, r"unknown settings \['batch'\]"),
    ({"batch_size": 2.5}, ValueError, r"learner.batch_size: expected an integer, got 2.5"),
    ({"lr": "fast"}, ValueError, r"learner.lr: expected a number"),
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


def test_reinforce_from_spec_gets_the_operator_features_and_a_bare_space_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from aoe_optuna.samplers.reinforce._features import workload_features
    from aoe_optuna.spec.loader import load_spec

    spec = load_spec("studies/qwen25_7b_decode_910b2.json")
    built = ReinforceSampler.from_spec(spec, seed=0)
    np.testing.assert_array_equal(built._features_for(spec.space),
                                  workload_features(spec.workload, spec.profile))
    bare = ReinforceSampler(space=spec.space, seed=0)
    with caplog.at_level("WARNING"):
        assert not bare._features_for(spec.space).any()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "operator features are off" in said[0]
