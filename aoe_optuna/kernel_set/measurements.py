"""A kernel-set operator's measurements, kept in an Optuna study like every other study's.

One study per operator (``<run>/<op>/<NxK>``) holds one trial per measurement: the
config as the trial's parameters (the space's distributions, so optuna-dashboard
shows them), the M it was timed at, its latency in microseconds as the value (a
minimize study), its cost and whether it built the config. A measurement is written
whole once it is done (``add_trial``), so an interrupted run loses at most the one
in progress and the same command resumes from what is stored. A failed measurement
is a FAIL trial with its reason: its config is never proposed again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState, create_trial

from aoe_optuna.attrs import (
    ATTR_BUILD_S,
    ATTR_COST,
    ATTR_FAILURE,
    ATTR_FAILURE_KIND,
    ATTR_SHAPE_M,
    KERNEL_SET_OP_ATTR,
)
from aoe_optuna.backends.base import Measurement
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.study.session import StoredPlan, hold_plan

METRIC = "latency_us"


@dataclass
class Measured:
    """What an operator's study holds, as arrays the model reads."""

    rows: list[np.ndarray] = field(default_factory=list)  # config index rows
    ms: list[int] = field(default_factory=list)
    latency_s: list[float] = field(default_factory=list)
    failed: set[int] = field(default_factory=set)  # flat ids of configs that failed
    pairs: set[tuple[int, int]] = field(default_factory=set)  # (flat id, M) measured
    cost_s: float = 0.0
    builds: int = 0  # measurements that built their config
    n_failed: int = 0

    @property
    def count(self) -> int:
        """Measurements taken, failed ones included (each one is budget spent)."""
        return len(self.latency_s) + self.n_failed


class OperatorStudy:
    """The study of one operator of a kernel-set run."""

    def __init__(self, storage: optuna.storages.BaseStorage, name: str, space: SearchSpace,
                 plan: Mapping[str, Any]) -> None:
        self.space = space
        self.study = optuna.create_study(storage=storage, study_name=name,
                                         direction="minimize", load_if_exists=True)
        if KERNEL_SET_OP_ATTR not in self.study.user_attrs:
            self.study.set_metric_names([METRIC])
        hold_plan(self.study, StoredPlan(KERNEL_SET_OP_ATTR, dict(plan), "kernel-set operator"))
        self._dists = space.distributions()
        self.measured = self._read()

    def _read(self) -> Measured:
        out = Measured()
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,
                                                                 TrialState.FAIL)):
            row = self.space.index(t.params)
            fid = int(self.space.flat_id(row[None, :])[0])
            out.cost_s += float(t.user_attrs.get(ATTR_COST, 0.0))
            out.builds += int(float(t.user_attrs.get(ATTR_BUILD_S, 0.0)) > 0)
            if t.state == TrialState.FAIL:
                out.failed.add(fid)
                out.n_failed += 1
                continue
            m = int(t.user_attrs[ATTR_SHAPE_M])
            out.rows.append(row)
            out.ms.append(m)
            out.latency_s.append(float(t.values[0]) * 1e-6)
            out.pairs.add((fid, m))
        return out

    def record(self, row: np.ndarray, m: int, result: Measurement) -> None:
        """Store one measurement of config ``row`` at ``m``."""
        fid = int(self.space.flat_id(row[None, :])[0])
        attrs: dict[str, Any] = {ATTR_SHAPE_M: int(m), ATTR_COST: float(result.cost_s),
                                 ATTR_BUILD_S: float(result.extra.get("build_s", 0.0))}
        params = self.space.config(row)
        out = self.measured
        out.cost_s += attrs[ATTR_COST]
        out.builds += int(attrs[ATTR_BUILD_S] > 0)
        if not result.ok or result.latency_s is None:
            attrs.update({ATTR_FAILURE_KIND: result.failure_kind or "unknown",
                          ATTR_FAILURE: result.reason[:500]})
            self.study.add_trial(create_trial(state=TrialState.FAIL, params=params,
                                              distributions=self._dists, user_attrs=attrs))
            out.failed.add(fid)
            out.n_failed += 1
            return
        value = float(result.latency_s) * 1e6
        self.study.add_trial(create_trial(value=value, params=params,
                                          distributions=self._dists, user_attrs=attrs))
        out.rows.append(row.copy())
        out.ms.append(int(m))
        out.latency_s.append(value * 1e-6)  # as a run that reads it back sees it
        out.pairs.add((fid, int(m)))
