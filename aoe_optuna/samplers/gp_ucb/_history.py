"""Study trials -> the arrays the GP sampler learns from.

Read afresh from storage on every call, so a resumed study or another worker's
trials are seen exactly as this worker would see its own: nothing the sampler
needs for correctness lives only in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.samplers.gp_ucb._targets import targets
from aoe_optuna.samplers.trial_rows import trial_row
from aoe_optuna.space.search_space import SearchSpace

STATES = (
    TrialState.COMPLETE,
    TrialState.FAIL,
    TrialState.PRUNED,
    TrialState.RUNNING,
    TrialState.WAITING,
)


@dataclass
class History:
    """Index rows of every config the study has touched, grouped by what became of it."""

    completed: np.ndarray  # (n, d) index rows with a value
    values: np.ndarray  # (n,) raw objective values, the study's direction
    failed: np.ndarray  # (f, d) measured failures and rule-breaking (PRUNED with constraints > 0)
    pending: np.ndarray  # (p, d) RUNNING/WAITING in other workers
    seen: set[int] = field(default_factory=set)  # flat ids never to propose again
    maximize: bool = True

    @property
    def n_used(self) -> int:
        """Configs that count towards the start-up design (including the baseline)."""
        return self.completed.shape[0] + self.failed.shape[0] + self.pending.shape[0]

    def targets(self, floor_quantile: float | None = None, transform: str = "copula") -> np.ndarray:
        """GP targets of the completed values, larger is better (see ``_targets``).

        ``floor_quantile``: values below that quantile are raised to it, so a few
        very slow configs do not squeeze the good region into a sliver of the
        standardised scale (the GP then models where the optimum can be).
        """
        return targets(self.values, transform, self.maximize, floor_quantile)

    def incumbents(self, k: int) -> np.ndarray:
        """The ``k`` best completed configs, best first."""
        if self.completed.shape[0] == 0:
            return self.completed
        order = np.argsort(-self.targets(), kind="stable")
        return self.completed[order[:k]]


def _broke_a_rule(trial: FrozenTrial) -> bool:
    """PRUNED for breaking a constraint (Optuna 5 ``set_constraint`` or the older list form)."""
    values: Any = getattr(trial, "constraints", None) or trial.system_attrs.get("constraints")
    if isinstance(values, dict):
        values = list(values.values())
    return bool(values) and any(float(c) > 0 for c in values)


def read_history(
    study: optuna.Study, space: SearchSpace, exclude_number: int | None = None,
    trials: Sequence[FrozenTrial] | None = None,
) -> History:
    """Sort the study's trials (all workers) into completed / failed / pending / seen."""
    if trials is None:
        trials = study.get_trials(deepcopy=False, states=STATES)
    d = len(space.names)
    groups: dict[str, list[np.ndarray]] = {"completed": [], "failed": [], "pending": []}
    values: list[float] = []
    seen: set[int] = set()
    for t in trials:
        if t.number == exclude_number:
            continue
        row = trial_row(space, t)
        if row is None:
            continue
        seen.add(int(space.flat_id(row)[0]))
        if t.state == TrialState.COMPLETE and t.value is not None and np.isfinite(t.value):
            groups["completed"].append(row)
            values.append(float(t.value))
        elif t.state == TrialState.FAIL or (t.state == TrialState.PRUNED and _broke_a_rule(t)):
            groups["failed"].append(row)
        elif t.state in (TrialState.RUNNING, TrialState.WAITING):
            groups["pending"].append(row)

    def stack(rows: list[np.ndarray]) -> np.ndarray:
        return np.array(rows, dtype=np.int64).reshape(-1, d)

    direction = study.directions[0] if study.directions else None
    return History(
        completed=stack(groups["completed"]),
        values=np.array(values, dtype=float),
        failed=stack(groups["failed"]),
        pending=stack(groups["pending"]),
        seen=seen,
        maximize=direction != optuna.study.StudyDirection.MINIMIZE,
    )
