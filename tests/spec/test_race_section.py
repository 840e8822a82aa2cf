"""The spec's race section: its defaults, its checks, and a canonical form that keeps
studies made before it the same studies."""

from __future__ import annotations

import pytest

from aoe_optuna.spec.loader import SpecError, spec_from_dict
from aoe_optuna.spec.race import RaceSettings


def test_defaults_and_the_budget_in_re_timings():
    spec = spec_from_dict({})
    assert spec.race == RaceSettings(epsilon=0.01, confidence=0.95, budget=0.2, contenders=5)
    assert "race" not in spec.canonical()  # not given: the canonical form of before
    assert spec.race.measurements(100) == 20 and spec.race.measurements(9) == 1
    rules = spec.race.rules(20, 5)
    assert (rules.min_rounds, rules.max_rounds, rules.epsilon) == (2, 10, 0.01)
    assert spec.race.rules(6, 1).max_rounds == 6
    assert rules.pairs and spec.race.allocation == "pairs"


def test_a_given_section_is_stored_whole():
    spec = spec_from_dict({"race": {"epsilon": 0.02, "patience": 30}})
    assert spec.race.epsilon == 0.02 and spec.race.patience == 30
    assert spec.canonical()["race"] == {"epsilon": 0.02, "confidence": 0.95, "budget": 0.2,
                                        "contenders": 5, "patience": 30}
    assert spec_from_dict(spec.canonical()).race == spec.race
    parked = spec_from_dict({"race": {"park": 0.0}})
    assert parked.race.park == 0.0 and parked.race.rules(20, 5).park == 0.0
    assert parked.canonical()["race"]["park"] == 0.0
    assert spec_from_dict(parked.canonical()).race == parked.race
    rounds = spec_from_dict({"race": {"allocation": "rounds"}})
    assert not rounds.race.rules(20, 5).pairs
    assert rounds.canonical()["race"]["allocation"] == "rounds"
    assert "allocation" not in spec_from_dict({"race": {"allocation": "pairs"}}).canonical()[
        "race"]


@pytest.mark.parametrize("race,expected", [
    ({"epsilon": -0.1}, "key 'race.epsilon': expected a finite number at least 0"),
    ({"confidence": 1.0}, "key 'race.confidence': expected"),
    ({"contenders": 0}, "key 'race.contenders': expected an integer from 1"),
    ({"patience": 0}, "key 'race.patience': expected an integer from 1"),
    ({"park": 0.5}, "key 'race.park': expected a finite number at least 0 and at most 0.49"),
    ({"allocation": "ocba"}, "key 'race.allocation': expected one of ['pairs', 'rounds']"),
    ({"rounds": 3}, "key 'race.rounds': expected one of the keys epsilon"),
])
def test_bad_keys_are_refused_in_one_line(race, expected):
    with pytest.raises(SpecError) as err:
        spec_from_dict({"race": race}, source="spec.json")
    assert expected in str(err.value) and "\n" not in str(err.value)
