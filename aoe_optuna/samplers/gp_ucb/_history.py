"""Study trials -> the arrays the GP sampler learns from.

Read afresh from storage on every call, so a resumed study or another worker's
trials are seen exactly as this worker would see its own: nothing the sampler
needs for correctness lives only in memory (``HistoryReader`` only remembers
what a finished trial, which can no longer change, contributes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.samplers.gp_ucb._targets import targets
from aoe_optuna.samplers.storage_cache import StorageCache
from aoe_optuna.samplers.trial_constraints import breaks_a_constraint
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
    # (n,) per completed row: it broke one of Optuna's constraints (constraints_func,
    # Trial.set_constraint). Its value still trains the objective's GP; it counts as a
    # failure for P(success) and is never an incumbent. None: none did.
    infeasible: np.ndarray | None = None

    @property
    def feasible_mask(self) -> np.ndarray:
        """(n,) completed rows that broke no constraint."""
        if self.infeasible is None:
            return np.ones(self.completed.shape[0], dtype=bool)
        return ~self.infeasible

    @property
    def completed_ok(self) -> np.ndarray:
        """Completed rows that broke no constraint: the successes P(success) learns from."""
        return self.completed if self.infeasible is None else self.completed[~self.infeasible]

    @property
    def all_failed(self) -> np.ndarray:
        """Failed rows, then completed rows that broke a constraint."""
        if self.infeasible is None or not self.infeasible.any():
            return self.failed
        return np.concatenate([self.failed, self.completed[self.infeasible]])

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

    def feasible_targets(self) -> np.ndarray:
        """``targets()`` with the rows that broke a constraint at -inf (never the best)."""
        return np.where(self.feasible_mask, self.targets(), -np.inf)

    def incumbents(self, k: int) -> np.ndarray:
        """The ``k`` best completed configs that broke no constraint, best first."""
        feasible = self.feasible_mask
        if not feasible.any():
            return self.completed[:0]
        # the log targets rank as the copula's do (both monotone, ties kept), without
        # the normal quantiles a ranking needs none of (nor scipy.special, ~0.1 s)
        key = np.where(feasible, self.targets(transform="log"), -np.inf)
        order = np.argsort(-key, kind="stable")
        return self.completed[order[: min(k, int(feasible.sum()))]]


@dataclass(frozen=True)
class _TrialRead:
    """What one trial contributes to a History."""

    row: np.ndarray | None  # None: not a config of the space
    flat_id: int = -1
    group: str | None = None  # "completed", "failed", "pending" or None (seen only)
    value: float = float("nan")
    infeasible: bool = False


def _read_trial(space: SearchSpace, t: FrozenTrial) -> _TrialRead:
    row = trial_row(space, t)
    if row is None:
        return _TrialRead(None)
    fid = int(space.flat_id(row)[0])
    if t.state == TrialState.COMPLETE and t.value is not None and np.isfinite(t.value):
        return _TrialRead(row, fid, "completed", float(t.value), breaks_a_constraint(t))
    if t.state == TrialState.FAIL or (t.state == TrialState.PRUNED and breaks_a_constraint(t)):
        return _TrialRead(row, fid, "failed")
    if t.state in (TrialState.RUNNING, TrialState.WAITING):
        return _TrialRead(row, fid, "pending")
    return _TrialRead(row, fid)


class HistoryReader:
    """``read_history`` for one space, reading each finished trial once per study.

    A finished trial never changes (storages refuse to update it), so what it
    contributes is kept by its storage trial id, which a storage never gives
    twice; live trials are read afresh on every call. The History is the one
    ``read_history`` returns; at 1000 trials this saves reading 1000 configs
    back into index rows on every suggestion.
    """

    def __init__(self, space: SearchSpace) -> None:
        self.space = space
        self._finished: StorageCache[dict[int, _TrialRead]] = StorageCache()

    def __call__(
        self, study: optuna.Study, exclude_number: int | None = None,
        trials: Sequence[FrozenTrial] | None = None,
    ) -> History:
        known = self._finished.setdefault(study._storage, {})

        def read(t: FrozenTrial) -> _TrialRead:
            if not t.state.is_finished():
                return _read_trial(self.space, t)
            key = t._trial_id
            if key not in known:
                known[key] = _read_trial(self.space, t)
            return known[key]

        return _assemble(study, self.space, exclude_number, trials, read)


def read_history(
    study: optuna.Study, space: SearchSpace, exclude_number: int | None = None,
    trials: Sequence[FrozenTrial] | None = None,
) -> History:
    """Sort the study's trials (all workers) into completed / failed / pending / seen."""
    return _assemble(study, space, exclude_number, trials, lambda t: _read_trial(space, t))


def _assemble(
    study: optuna.Study, space: SearchSpace, exclude_number: int | None,
    trials: Sequence[FrozenTrial] | None, read: Callable[[FrozenTrial], _TrialRead],
) -> History:
    if trials is None:
        trials = study.get_trials(deepcopy=False, states=STATES)
    d = len(space.names)
    groups: dict[str, list[np.ndarray]] = {"completed": [], "failed": [], "pending": []}
    values: list[float] = []
    infeasible: list[bool] = []
    seen: set[int] = set()
    for t in trials:
        if t.number == exclude_number:
            continue
        r = read(t)
        if r.row is None:
            continue
        seen.add(r.flat_id)
        if r.group is None:
            continue
        groups[r.group].append(r.row)
        if r.group == "completed":
            values.append(r.value)
            infeasible.append(r.infeasible)

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
        infeasible=np.array(infeasible, dtype=bool) if any(infeasible) else None,
    )
