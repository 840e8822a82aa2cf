"""A build pool run in virtual time: the proposals of a chip run with B builders, made
in the order its clock makes them, without a thread per trial in flight.

On the simulator a measurement costs nothing to compute, so the pool's threads
(:mod:`aoe_optuna.study.run.build_pool`) propose in whatever order they happen to
finish, not in the order the pool's clock has them finish, and an eight-card
server's 192 trials in flight would be 192 threads. Here one thread runs the
clock (:class:`~aoe_optuna.study.run.pipeline_clock.PoolClock`): a trial is asked
for when a slot frees on the clock, measured at once (the model's value and
cost), and told only when its timing ends on the clock. The trials asked and not
yet told are RUNNING in storage, so the sampler conditions on exactly the configs
a chip run would have in flight at that moment (GP-UCB's pending points, the
claims, the objective's check for a config another trial holds).

What differs from a run on the chip: one sampler proposes every trial (a run
with W worker processes has W samplers, seeded seed + i, over the same storage);
the sampler's own time is not on the clock, nor is re-timing; a proposal that
measures nothing (infeasible, a repeat, a config another trial holds) takes no
time; the device is taken in proposal order (:mod:`.pipeline_clock`). An
operator run's chunks run one after another (:meth:`VirtualPool.run_chunk`): each
starts when the last one's last timing ends, with idle builders, as the tuner's
chunks do.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import TrialState

from aoe_optuna.attrs import ATTR_BUILD_S, ATTR_COST, ATTR_REPEAT_OF
from aoe_optuna.operators.scheduler import ShapeHistory
from aoe_optuna.operators.tuner import MAX_IDLE, OperatorTuner
from aoe_optuna.operators.units import OperatorUnit
from aoe_optuna.study.run.loop import Budget, BudgetGuard, RunResult, StudyProgress
from aoe_optuna.study.run.objective import MeasurementFailed, TuningObjective, count_measured
from aoe_optuna.study.run.pipeline_clock import Job, PoolClock


@dataclass
class VirtualPool:
    """``builders`` build cores and ``devices`` devices with at most ``in_flight`` trials
    proposed and unfinished (default builders + devices); the clock runs on across
    the chunks run on it."""

    builders: int
    devices: int = 1
    in_flight: int | None = None
    now_s: float = 0.0
    # (study name, trial number) -> when its timing ended on the clock
    ends: dict[tuple[str, int], float] = field(default_factory=dict)
    most_in_flight: int = 0  # the most trials RUNNING at once, as the sampler saw them

    @property
    def window(self) -> int:
        return self.in_flight or self.builders + self.devices

    def run_chunk(self, study: optuna.Study, objective: TuningObjective, budget: Budget,
                  max_idle: int = MAX_IDLE) -> RunResult:
        """Measure ``study`` until it holds ``budget.n_measurements``, on the clock."""
        target = budget.n_measurements
        if target is None:
            raise ValueError("a virtual pool's chunk needs a number of measurements")
        objective.may_measure = BudgetGuard(study, target)
        clock = PoolClock(self.builders, self.devices, start_s=self.now_s)
        now, idle, order = self.now_s, 0, itertools.count()
        measured = count_measured(study.get_trials(deepcopy=False))
        pending: list[tuple[float, int, optuna.Trial, float | None]] = []
        while True:
            while len(pending) < self.window and measured + len(pending) < target \
                    and idle < max_idle:
                self.most_in_flight = max(self.most_in_flight, len(pending))
                trial = study.ask()
                outcome = _measure(objective, trial)
                if outcome is None:  # measured nothing: told at once, no time taken
                    idle += 1
                    continue
                idle = 0
                attrs = trial.user_attrs
                build = float(attrs.get(ATTR_BUILD_S, 0.0) or 0.0)
                job = Job(build, max(float(attrs[ATTR_COST]) - build, 0.0))
                heapq.heappush(pending, (clock.add(job, now).end, next(order), trial,
                                         outcome[0]))
            if not pending:
                break
            end, _, trial, value = heapq.heappop(pending)
            now = max(now, end)
            if value is None:
                study.tell(trial, state=TrialState.FAIL)
            else:
                study.tell(trial, value)
            measured += 1
            self.ends[(study.study_name, trial.number)] = end
        self.now_s = now
        progress = StudyProgress.of(study.get_trials(deepcopy=False))
        return RunResult(f"reached {target} measurements", progress, 0.0)


def _measure(objective: TuningObjective, trial: optuna.Trial) -> tuple[float | None] | None:
    """The trial's value (None: a failed measurement, told later as one), or None when
    it measured nothing (told here: pruned, or answered from storage)."""
    try:
        value: float | None = objective(trial)
    except optuna.TrialPruned:
        trial.study.tell(trial, state=TrialState.PRUNED)
        return None
    except MeasurementFailed:
        if ATTR_REPEAT_OF in trial.user_attrs:
            trial.study.tell(trial, state=TrialState.FAIL)
            return None
        value = None
    if ATTR_REPEAT_OF in trial.user_attrs:
        trial.study.tell(trial, value)
        return None
    return (value,)


class VirtualPoolTuner(OperatorTuner):
    """An operator run whose chunks run on a :class:`VirtualPool` (in this process, in
    virtual time) instead of the session's threads or workers. ``chunk``: the
    measurements of a chunk past the warm-up, in place of the tuner's rule (a pool
    with chunks smaller than its trials in flight, for comparison)."""

    def __init__(self, *args: Any, pool: VirtualPool, chunk: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool = pool
        self.chunk = chunk

    def chunk_size(self, history: ShapeHistory) -> int:
        if self.chunk is None or history.measured < self.scheduler.warmup:
            return super().chunk_size(history)
        return self.chunk

    def run_chunk(self, unit: OperatorUnit, budget: Budget) -> RunResult:
        session = unit.session  # type: ignore[attr-defined]  (both units hold one)
        return self.pool.run_chunk(unit.study, session.objective(), budget)
