"""Builds saved by the cache are real cache hits: a failed measurement whose build never
ran (no compiler, a config refused before its build) is none."""

from __future__ import annotations

from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_BUILD_CACHED, ATTR_BUILD_S, ATTR_COST, ATTR_MEASURED
from aoe_optuna.study.run.time_split import TimeSplit, saved_by_cache


def trial(state: TrialState, **attrs: Any) -> FrozenTrial:
    return optuna.trial.create_trial(
        state=state, value=1.0 if state == TrialState.COMPLETE else None,
        user_attrs={ATTR_COST: 0.5, ATTR_MEASURED: True, **attrs})


def test_only_real_cache_hits_are_builds_saved() -> None:
    hit = trial(TrialState.COMPLETE, **{ATTR_BUILD_S: 0.0, ATTR_BUILD_CACHED: True})
    remembered = trial(TrialState.FAIL, **{ATTR_BUILD_S: 0.0, ATTR_BUILD_CACHED: True})
    built = trial(TrialState.COMPLETE, **{ATTR_BUILD_S: 0.4, ATTR_BUILD_CACHED: False})
    never_built = trial(TrialState.FAIL, **{ATTR_BUILD_S: 0.0})  # "compiler not found"
    unsaid_hit = trial(TrialState.COMPLETE, **{ATTR_BUILD_S: 0.0})  # a study stored before
    unsaid_build = trial(TrialState.COMPLETE, **{ATTR_BUILD_S: 30.0})
    assert [saved_by_cache(t) for t in (hit, remembered, built, never_built, unsaid_hit,
                                        unsaid_build)] == [True, True, False, False, True,
                                                           False]


def test_three_failed_builds_save_nothing() -> None:
    """The report: every trial failed with "compiler 'cc' not found", and the summary said
    "builds saved by the cache 3"."""
    failed = [trial(TrialState.FAIL, **{ATTR_BUILD_S: 0.0, "failure_kind": "unsupported"})
              for _ in range(3)]
    split = TimeSplit.of(failed)
    assert split.saved_by_cache == 0
    assert "builds saved by the cache 0" in split.items()
