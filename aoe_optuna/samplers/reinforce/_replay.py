"""Rebuild the learner from storage: replay the measured trials in a fixed order.

No sampler object is stored with a study, so every worker (and every resumed
study) rebuilds the policy by feeding the measured trials, in order of
completion (ties by trial number), batch by batch to a freshly seeded
learner. The same storage and seed give the same policy in every process.
Replay is incremental: a process keeps its learner and the trial numbers it
has consumed, and only replays from scratch when storage no longer starts
with that sequence (another order, a deleted trial).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_MEASURED
from aoe_optuna.samplers.reinforce._learner import ReinforceLearner
from aoe_optuna.samplers.reinforce._plain_values import as_throughput
from aoe_optuna.samplers.trial_constraints import breaks_a_constraint
from aoe_optuna.samplers.trial_rows import trial_row
from aoe_optuna.space.search_space import SearchSpace


@dataclass(frozen=True)
class Observation:
    number: int
    row: np.ndarray
    value: float  # throughput; nan for a failed measurement


class TrialRows:
    """Index rows of trials' configs, cached by trial number once they cannot change."""

    def __init__(self, space: SearchSpace) -> None:
        self.space = space
        self._rows: dict[int, np.ndarray | None] = {}

    def __call__(self, trial: FrozenTrial) -> np.ndarray | None:
        if trial.number in self._rows:
            return self._rows[trial.number]
        row = trial_row(self.space, trial)
        if row is not None or trial.state.is_finished():
            self._rows[trial.number] = row
        return row


class ObservationCache:
    """A study's completed and failed-while-measuring trials, in order of completion
    then number, each finished trial read once.

    A finished trial never changes, so what it contributes to the replay (an
    observation or nothing) and where it sorts are kept by trial number; a
    suggestion then costs a dictionary lookup per trial instead of reading its
    state, value, attributes and params again
    (docs/decisions/0009-reinforce-claim-index-and-caches.md).

    ``maximize``: None for a study made by aoe-tune, whose values are
    throughputs and whose failed trials count only once measured (a config
    that did not build says nothing about its speed); True or False for a
    plain study of that direction: every value mapped by
    :func:`._plain_values.as_throughput`, and every failed trial, or completed
    one that broke a constraint, counted as a failure.
    """

    def __init__(
        self, row_of: Callable[[FrozenTrial], np.ndarray | None], maximize: bool | None = None
    ) -> None:
        self.row_of = row_of
        self.maximize = maximize
        self._done: dict[int, tuple[tuple, Observation | None]] = {}

    def __call__(self, trials: Sequence[FrozenTrial]) -> list[Observation]:
        entries = []
        for t in trials:
            entry = self._done.get(t.number)
            if entry is None:
                if t.state not in (TrialState.COMPLETE, TrialState.FAIL):
                    continue
                entry = ((t.datetime_complete is None, t.datetime_complete, t.number),
                         self._observation(t))
                self._done[t.number] = entry
            entries.append(entry)
        entries.sort(key=lambda e: e[0])
        return [o for _, o in entries if o is not None]

    def _observation(self, t: FrozenTrial) -> Observation | None:
        if self.maximize is not None:
            return self._plain_observation(t, self.maximize)
        if t.state == TrialState.FAIL and not t.user_attrs.get(ATTR_MEASURED):
            return None
        row = self.row_of(t)
        if row is None:
            return None
        if t.state == TrialState.COMPLETE and t.value is not None and t.value > 0:
            return Observation(t.number, row, float(t.value))
        if t.state == TrialState.FAIL:
            return Observation(t.number, row, float("nan"))
        return None

    def _plain_observation(self, t: FrozenTrial, maximize: bool) -> Observation | None:
        row = self.row_of(t)
        if row is None:
            return None
        value = t.value if t.state == TrialState.COMPLETE else None
        if value is None or not np.isfinite(value) or breaks_a_constraint(t):
            return Observation(t.number, row, float("nan"))
        return Observation(t.number, row, as_throughput(float(value), maximize))


@dataclass
class ReplayCache:
    """The learner of one process and the trial numbers it has consumed, in order."""

    make_learner: Callable[[], ReinforceLearner]
    learner: ReinforceLearner | None = None
    consumed: list[int] = field(default_factory=list)
    replays: int = 0  # how many times the learner was rebuilt from scratch

    def sync(self, observations: Sequence[Observation]) -> ReinforceLearner:
        """Bring the learner up to date with ``observations`` (full batches only)."""
        numbers = [o.number for o in observations]
        if self.learner is None or numbers[: len(self.consumed)] != self.consumed:
            self.learner = self.make_learner()
            self.consumed = []
            self.replays += 1
        batch = self.learner.settings.batch_size
        while len(numbers) - len(self.consumed) >= batch:
            chunk = observations[len(self.consumed) : len(self.consumed) + batch]
            self.learner.update(
                np.stack([o.row for o in chunk]), np.array([o.value for o in chunk])
            )
            self.consumed.extend(o.number for o in chunk)
        return self.learner
