"""Running a tuning study: the budget, the stops, and the worker's bookkeeping.

The budget counts *measurements* over the whole study (``--n-trials 100``
means the study ends with 100 measured configs however many runs it took),
so the same command resumes an interrupted study. Infeasible proposals are
skipped without measuring and do not count. Time budgets are in the virtual
time the measurements would cost on hardware by default (what
``Measurement.cost_s`` reports), or in wall time on request.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_CUT_SHORT
from aoe_optuna.study.run.build_pool import PoolPlan, pool_objective
from aoe_optuna.study.run.objective import (
    ATTR_COST,
    ATTR_INFEASIBLE,
    ATTR_REPEAT_OF,
    MeasurementFailed,
    TuningObjective,
    count_measured,
    is_measured,
)
from aoe_optuna.study.run.pipeline_clock import pooled_clock_s
from aoe_optuna.study.trials.ended_elsewhere import told_too_late, what_became_of
from aoe_optuna.study.trials.fault_points import fault_point
from aoe_optuna.study.trials.recovery import WorkerTaggingSampler, held_elsewhere, sweep_dead_trials

# A sampler that proposes this many infeasible configs in a row is not
# going to find a feasible one: stop instead of spinning.
MAX_INFEASIBLE_IN_A_ROW = 2000
# Nor is one that proposes the same infeasible config this many times in a row.
MAX_SAME_INFEASIBLE = 50
# Nor one that proposes nothing new to measure (configs measured before, infeasible ones,
# mixed) this many times in a row: a small space nearly measured out.
MAX_IDLE_IN_A_ROW = 2000
POLL_S = 0.5  # how often a worker with nothing to do looks at the others' progress


@dataclass
class Budget:
    """When a study is done: measurements, time, or a target throughput."""

    n_measurements: int | None = None
    time_s: float | None = None
    wall_time: bool = False
    target_tokens_per_s: float | None = None


@dataclass
class StudyProgress:
    """What the study holds now (all workers), recomputed from storage."""

    measured: int = 0
    running: int = 0  # being measured (or checked) by some worker right now
    infeasible: int = 0
    repeats: int = 0  # re-proposed configs answered from storage
    failed: int = 0
    virtual_s: float = 0.0
    best: FrozenTrial | None = None
    last: FrozenTrial | None = None  # the trial that just finished, if any
    held: list[FrozenTrial] = field(default_factory=list)  # RUNNING, no live local owner

    @classmethod
    def of(cls, trials: list[FrozenTrial]) -> StudyProgress:
        p = cls()
        for t in trials:
            if t.state == TrialState.PRUNED and ATTR_INFEASIBLE in t.user_attrs:
                p.infeasible += 1
            elif ATTR_REPEAT_OF in t.user_attrs:
                p.repeats += 1
            elif t.state == TrialState.FAIL and is_measured(t):
                p.failed += 1
            elif t.state == TrialState.RUNNING:
                p.running += 1
                if held_elsewhere(t):
                    p.held.append(t)
            p.virtual_s += float(t.user_attrs.get(ATTR_COST, 0.0) or 0.0)
            if t.state == TrialState.COMPLETE and not t.user_attrs.get(ATTR_CUT_SHORT) and (
                p.best is None or (t.value or 0) > (p.best.value or 0)
            ):
                p.best = t
        p.measured = count_measured(trials)
        pooled = pooled_clock_s(trials)
        if pooled is not None:  # built ahead: builds overlap the device's timings
            p.virtual_s = pooled
        return p


@dataclass
class RunResult:
    stop_reason: str
    progress: StudyProgress
    wall_s: float
    swept: list[int] = field(default_factory=list)
    # (worker index, exit code) of the worker processes that failed (run on workers only)
    failed_workers: tuple[tuple[int, int], ...] = ()


class _Stopper:
    """Optuna callback: stop the study when the budget is spent."""

    def __init__(self, budget: Budget, started: float, on_update: Callable[[StudyProgress], None],
                 stale_after_s: float | None = None, max_idle: int = MAX_IDLE_IN_A_ROW):
        self.budget = budget
        self.started = started
        self.on_update = on_update
        self.stale_after_s = stale_after_s
        self.reason = "interrupted"
        self.infeasible_in_a_row = 0
        self.idle_in_a_row = 0
        self.max_idle = max_idle
        self.same_infeasible: tuple[dict, int] = ({}, 0)

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        fault_point("told")
        progress = StudyProgress.of(study.get_trials(deepcopy=False))
        progress.last = trial
        self.on_update(progress)
        reason = self.check(progress)
        if reason is None:
            reason = self._wait_for_pending(study, progress)
        if reason is None:
            reason = self._spinning(trial)
            if reason is not None:  # said whatever the progress setting: the run did not finish
                print(f"aoe-tune: stopping: {reason}", file=sys.stderr)
        if reason is not None:
            self.reason = reason
            study.stop()

    def _spinning(self, trial: FrozenTrial) -> str | None:
        """A sampler stuck on infeasible proposals; None while it is not."""
        pruned = trial.state == TrialState.PRUNED
        infeasible = pruned and ATTR_INFEASIBLE in trial.user_attrs
        self.infeasible_in_a_row = self.infeasible_in_a_row + 1 if pruned else 0
        last, n = self.same_infeasible
        n = (n + 1 if trial.params == last else 1) if infeasible else 0
        self.same_infeasible = (dict(trial.params), n)
        if n >= MAX_SAME_INFEASIBLE:
            return f"the sampler proposed the same infeasible config {n} times in a row"
        self.idle_in_a_row = 0 if is_measured(trial) else self.idle_in_a_row + 1
        if self.idle_in_a_row >= self.max_idle:
            return (f"the sampler proposed {self.max_idle} configs in a row with nothing "
                    "new to measure (measured before or infeasible)")
        if self.infeasible_in_a_row >= MAX_INFEASIBLE_IN_A_ROW:
            return f"the sampler proposed {MAX_INFEASIBLE_IN_A_ROW} infeasible configs in a row"
        return None

    def _wait_for_pending(self, study: optuna.Study, progress: StudyProgress) -> str | None:
        """Other workers' running trials could fill the budget: wait instead of proposing."""
        n = self.budget.n_measurements
        while n is not None and progress.measured < n <= progress.measured + progress.running:
            time.sleep(POLL_S)
            sweep_dead_trials(study, self.stale_after_s)
            optuna.storages.fail_stale_trials(study)  # dead workers on other hosts
            progress = StudyProgress.of(study.get_trials(deepcopy=False))
            self.on_update(progress)
            reason = self.check(progress)
            if reason is not None:
                return reason
        return None

    def check(self, progress: StudyProgress) -> str | None:
        b = self.budget
        if b.n_measurements is not None and progress.measured >= b.n_measurements:
            return f"reached {b.n_measurements} measurements"
        if b.time_s is not None:
            used = time.monotonic() - self.started if b.wall_time else progress.virtual_s
            if used >= b.time_s:
                kind = "wall" if b.wall_time else "virtual"
                return f"time budget spent ({used:.0f} s {kind} of {b.time_s:.0f} s)"
        if (
            b.target_tokens_per_s is not None
            and progress.best is not None
            and (progress.best.value or 0) >= b.target_tokens_per_s
        ):
            return f"target {b.target_tokens_per_s:g} tokens/s reached"
        return None


class BudgetGuard:
    """May this trial measure? Exact under any number of workers, without locks.

    Trial numbers are handed out in creation order and a trial is in storage
    (RUNNING, or WAITING when enqueued) before its objective runs. A trial may
    measure only while fewer than ``n`` trials numbered below it are measured,
    running or waiting. The (n+1)-th measurement by number would see n trials
    ahead of it, so no study ever holds more than ``n`` measurements; a trial
    ahead that turns out infeasible only makes this check cautious, and the
    study then goes on until exactly ``n`` are measured.
    """

    def __init__(self, study: optuna.Study, n: int) -> None:
        self.study = study
        self.n = n

    def __call__(self, trial: optuna.Trial) -> bool:
        ahead = 0
        for t in self.study.get_trials(deepcopy=False):
            if t.number < trial.number and (
                is_measured(t) or t.state in (TrialState.RUNNING, TrialState.WAITING)
            ):
                ahead += 1
        return ahead < self.n


def run_study(
    study: optuna.Study,
    objective: TuningObjective,
    budget: Budget,
    on_update: Callable[[StudyProgress], None] = lambda p: None,
    stale_after_s: float | None = None,
    max_idle: int = MAX_IDLE_IN_A_ROW,
    pool: PoolPlan | None = None,
) -> RunResult:
    """Optimise until the budget is spent; KeyboardInterrupt propagates to the caller.

    ``pool``: build ahead on its builders and time under its device lease
    (:mod:`aoe_optuna.study.run.build_pool`), its builders + 1 trials at a time, and
    never more than the measurements the budget has left.

    ``stale_after_s``: end RUNNING trials that nothing watches after this long
    (see :func:`aoe_optuna.study.trials.recovery.sweep_dead_trials`). ``max_idle``: stop after
    this many proposals in a row that measure nothing (repeats, infeasible, surplus).
    """
    started = time.monotonic()
    swept = sweep_dead_trials(study, stale_after_s)
    stopper = _Stopper(budget, started, on_update, stale_after_s, max_idle)
    progress = StudyProgress.of(study.get_trials(deepcopy=False))
    on_update(progress)
    done = stopper.check(progress)
    if done is not None:
        return RunResult(f"already done: {done}", progress, 0.0, swept)
    timeout = budget.time_s if budget.wall_time else None
    if budget.n_measurements is not None:
        objective.may_measure = BudgetGuard(study, budget.n_measurements)
    n_jobs = 1
    if pool is not None:
        left = None if budget.n_measurements is None else budget.n_measurements - progress.measured
        n_jobs = pool_objective(study, objective, pool.at_most(left))
    elif not isinstance(study.sampler, WorkerTaggingSampler):
        study.sampler = WorkerTaggingSampler(study.sampler)
    while True:
        left = None if timeout is None else timeout - (time.monotonic() - started)
        if left is not None and left <= 0:
            break
        try:
            study.optimize(
                objective,
                n_trials=None,
                timeout=left,
                n_jobs=n_jobs,
                callbacks=[stopper],
                catch=(MeasurementFailed,),
                gc_after_trial=False,
                show_progress_bar=False,
            )
            break
        except (ValueError, AssertionError, optuna.exceptions.UpdateFinishedTrialError) as exc:
            note = _ended_elsewhere(study, objective, exc)
            if note is None:
                raise
            print(f"aoe-tune: {note}", file=sys.stderr)
        progress = StudyProgress.of(study.get_trials(deepcopy=False))
        on_update(progress)
        done = stopper.check(progress)
        if done is not None:
            stopper.reason = done
            break
    progress = StudyProgress.of(study.get_trials(deepcopy=False))
    reason = stopper.reason
    if reason == "interrupted" and timeout is not None:
        reason = f"time budget spent ({timeout:.0f} s wall)"
    return RunResult(reason, progress, time.monotonic() - started, swept)


def _ended_elsewhere(study: optuna.Study, objective: TuningObjective,
                     exc: BaseException) -> str | None:
    """One line when ``exc`` is Optuna refusing this worker's trial because another worker
    ended it meanwhile (this one was paused past the heartbeat); None for anything else."""
    sampler = study.sampler
    trial_id = sampler.current if isinstance(sampler, WorkerTaggingSampler) else None
    if trial_id is None or not told_too_late(exc):
        return None
    trial = study._storage.get_trial(trial_id)
    if not trial.state.is_finished():
        return None
    note, objective.late_note = objective.late_note, None
    return note or what_became_of(trial)
