"""An operator run's parent study, opened for a command: found through the session
(its storage, the spec given or the one it stored, the settings a resume keeps), the
backend checked against the workload, then the tuner or a follower started on it.

The command line only parses the options and prints; what it runs is built here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna

from aoe_optuna.backends.base import BackendBase
from aoe_optuna.operators.layer_ops import check_backend
from aoe_optuna.operators.tuner import MAX_IDLE, OperatorTuner, TunerOptions
from aoe_optuna.operators.warm_start import Donor
from aoe_optuna.operators.workers import follow_run
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.study.session import find_study

PARENT_SUFFIX = "-operators"  # a run's parent study: the spec's study name and this


@dataclass(frozen=True)
class OperatorRun:
    """The parent study of an operator run, read before anything is written."""

    storage: optuna.storages.BaseStorage
    storage_url: str
    name: str
    spec: StudySpec
    stored: dict[str, Any]  # what the parent holds (budget, scheduler...); empty: new

    @property
    def started(self) -> bool:
        return bool(self.stored)

    def tuner(self, options: TunerOptions, kb_donors: list[Donor],
              on_event: Callable[[str], None], backend: BackendBase | None = None) -> OperatorTuner:
        """The run's tuner; ``backend`` is the spec's, made before the storage was opened
        (None: made from the stored spec)."""
        return OperatorTuner(self.storage, self.storage_url, self.name, self.spec, options,
                             kb_donors, on_event, backend=backend)

    def follow(self, on_event: Callable[[str], None], builders: int | None = None) -> int:
        """Join the chunks the run's tuner (on another host) allocates, until it is done,
        building ahead on ``builders``; the number of chunks joined."""
        return follow_run(self.storage, self.storage_url, self.name, on_event, MAX_IDLE,
                          builders)


def open_operator_run(storage_url: str, spec: StudySpec | None,
                      study_name: str | None) -> OperatorRun:
    """The run named ``study_name`` (default: the spec's), resumed from its stored spec
    when none is given; refused in one line when there is nothing to run."""
    if study_name is None:
        if spec is None:
            raise ValueError("pass --config SPEC (new run) or --study-name NAME (resume)")
        study_name = spec.default_study_name() + PARENT_SUFFIX
    found = find_study(storage_url, study_name, spec)
    check_backend(found.spec.backend_kind, found.spec.workload)
    return OperatorRun(found.storage, storage_url, found.name, found.spec, found.attrs)
