"""A result in storage is a measurement, whatever state its trial was left in.

A FAIL trial that holds a whole result (``measured`` written last, no failure
kind) is what a paused worker leaves behind when its trial is failed by a
storage opened without ``KeepResultOnStale``: it must still be the best config
and the baseline where it is either.
"""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.distributions import IntDistribution
from optuna.trial import TrialState, create_trial

from aoe_optuna.attrs import ATTR_FAILURE_KIND, ATTR_MEASURED
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.create import baseline_trial, best_trial

ROOT = Path(__file__).resolve().parents[2]
DIST = {"tile_m": IntDistribution(16, 256, step=16)}


def _study(tmp_path: Path) -> optuna.Study:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    return optuna.create_study(storage=url, study_name="s", direction="maximize")


def _failed_with_result(
    tile_m: int, tokens_per_s: float, **attrs: object
) -> optuna.trial.FrozenTrial:
    return create_trial(state=TrialState.FAIL, params={"tile_m": tile_m}, distributions=DIST,
                        user_attrs={"tokens_per_s": tokens_per_s, ATTR_MEASURED: True, **attrs})


def test_a_failed_trial_holding_the_best_result_is_the_best(tmp_path: Path) -> None:
    study = _study(tmp_path)
    study.add_trial(create_trial(value=80.0, params={"tile_m": 64}, distributions=DIST))
    study.add_trial(_failed_with_result(128, 95.0))
    best = best_trial(study)
    assert best is not None and best.number == 1 and best.value == 95.0
    assert best.params == {"tile_m": 128}
    stored = study.trials[1]
    assert stored.state == TrialState.FAIL and stored.value is None  # storage is untouched


def test_a_failed_measurement_or_a_bare_failure_is_not_a_result(tmp_path: Path) -> None:
    study = _study(tmp_path)
    study.add_trial(create_trial(value=80.0, params={"tile_m": 64}, distributions=DIST))
    study.add_trial(_failed_with_result(128, 95.0, **{ATTR_FAILURE_KIND: "build"}))
    study.add_trial(create_trial(state=TrialState.FAIL, params={"tile_m": 32},
                                 distributions=DIST, user_attrs={"tokens_per_s": 99.0}))
    best = best_trial(study)
    assert best is not None and best.number == 0


def test_the_baseline_measured_by_a_failed_trial_is_found(tmp_path: Path) -> None:
    spec = load_spec(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
    assert spec.baseline is not None
    study = _study(tmp_path)
    dists = {k: optuna.distributions.CategoricalDistribution([v]) for k, v in spec.baseline.items()}
    study.add_trial(create_trial(state=TrialState.FAIL, params=dict(spec.baseline),
                                 distributions=dists,
                                 user_attrs={"tokens_per_s": 70.0, ATTR_MEASURED: True}))
    base = baseline_trial(study, spec)
    assert base is not None and base.value == 70.0
