"""The live view of a tuning run: a rich progress bar on a terminal, plain lines elsewhere."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from typing import Any

from optuna.trial import FrozenTrial, TrialState
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from aoe_optuna.attrs import ATTR_FAILURE, ATTR_FAILURE_KIND
from aoe_optuna.study.recovery import owner_text
from aoe_optuna.study.runner import Budget, StudyProgress


def describe_best(progress: StudyProgress, baseline: float | None, roofline: float | None) -> str:
    """"best 61.2 tok/s (x1.34 vs baseline, 63% of roofline) tile_m=16 ..." or "no result yet"."""
    best = progress.best
    if best is None or best.value is None:
        return "no result yet"
    parts = [f"best {best.value:,.4g} tok/s"]
    if baseline:
        parts.append(f"x{best.value / baseline:.3f} vs baseline")
    if roofline:
        parts.append(f"{best.value / roofline:.1%} of roofline")
    cfg = " ".join(f"{k}={v}" for k, v in best.params.items())
    return f"{parts[0]} ({', '.join(parts[1:])}) {cfg}" if len(parts) > 1 else f"{parts[0]} {cfg}"


def describe_held(held: list[FrozenTrial], now: datetime | None = None) -> str:
    """"trial 104 RUNNING 3m05s, no aoe-tune worker (optuna ask?)": who the study waits on."""
    now = now or datetime.now()
    parts = []
    for t in held[:3]:
        age = (now - t.datetime_start).total_seconds() if t.datetime_start else 0.0
        parts.append(f"trial {t.number} RUNNING {int(age) // 60}m{int(age) % 60:02d}s, "
                     f"{owner_text(t)}")
    more = f" (+{len(held) - 3} more)" if len(held) > 3 else ""
    return "held elsewhere: " + "; ".join(parts) + more


def describe_time(progress: StudyProgress, budget: Budget, wall_s: float) -> str:
    virtual = f"virtual {progress.virtual_s:,.0f} s"
    if budget.time_s is not None and not budget.wall_time:
        virtual += f" of {budget.time_s:,.0f} s"
    wall = f"wall {wall_s:,.0f} s"
    if budget.time_s is not None and budget.wall_time:
        wall += f" of {budget.time_s:,.0f} s"
    return f"{virtual}, {wall}"


class ProgressView:
    """Callable with a StudyProgress; renders measurements / budget and the best so far."""

    def __init__(
        self,
        budget: Budget,
        baseline: Any = None,
        roofline: float | None = None,
        console: Console | None = None,
        enabled: bool = True,
    ) -> None:
        self.budget = budget
        self.baseline_fn = baseline if callable(baseline) else (lambda: baseline)
        self.roofline = roofline
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.started = time.monotonic()
        self.interactive = enabled and self.console.is_terminal
        self._progress: Progress | None = None
        self._task: Any = None
        self._last_line = 0.0

    def __enter__(self) -> ProgressView:
        if self.interactive:
            self._progress = Progress(
                TextColumn("[bold]measurements"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[times]}"),
                TextColumn("\n  {task.fields[best]}"),
                console=self.console,
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "tune", total=self.budget.n_measurements, best="", times=""
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, progress: StudyProgress) -> None:
        if not self.enabled:
            return
        self._report_failure(progress)
        wall = time.monotonic() - self.started
        best = describe_best(progress, self.baseline_fn(), self.roofline)
        extra = f"{progress.infeasible} infeasible skipped, {progress.failed} failed"
        if progress.repeats:
            extra += f", {progress.repeats} repeats served"
        if progress.held:
            extra += f" | {describe_held(progress.held)}"
        times = f"{describe_time(progress, self.budget, wall)} | {extra}"
        if self._progress is not None:
            self._progress.update(self._task, completed=progress.measured, best=best, times=times)
            return
        now = time.monotonic()
        if now - self._last_line >= 5.0 or progress.measured == self.budget.n_measurements:
            self._last_line = now
            total = self.budget.n_measurements
            of = f"/{total}" if total is not None else ""
            print(f"[{progress.measured}{of} measured] {best} | {times}", file=sys.stderr)

    def _report_failure(self, progress: StudyProgress) -> None:
        """One line per failed measurement: the study goes on, the user should know why."""
        t = progress.last
        if t is None or t.state != TrialState.FAIL:
            return
        kind = t.user_attrs.get(ATTR_FAILURE_KIND)
        if kind is None or "repeat_of" in t.user_attrs:
            return  # interrupted before measuring, or a repeat of a failure already reported
        reason = str(t.user_attrs.get(ATTR_FAILURE, "")).splitlines()
        first = reason[0][:160] if reason else ""
        self.console.print(f"trial {t.number} failed ({kind}): {first}", markup=False,
                           highlight=False)
