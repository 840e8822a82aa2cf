"""The live view of a tuning run: a bar that redraws in place on a terminal, plain lines
elsewhere.

On a terminal every line is laid out for the terminal's width at each redraw
(:mod:`aoe_optuna.study.report.text_fit`): the bar shrinks, the counts, the elapsed time
and the ETA stay, and the best config wraps between whole ``key=value`` pairs.
A table of columns (rich's ``Progress``) gave the best config's long text the
width and squeezed the bar and the counts out of the line.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from optuna.trial import FrozenTrial, TrialState
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.text import Text

from aoe_optuna.attrs import ATTR_FAILURE, ATTR_FAILURE_KIND
from aoe_optuna.study.report.text_fit import rate_text, wrap_items
from aoe_optuna.study.run.loop import Budget, StudyProgress
from aoe_optuna.study.trials.recovery import owner_text

PLAIN_EVERY_S = 5.0  # a piped run prints a line at most this often (and at the end)
MIN_BAR = 10  # narrower than this, the bar is left out and the figures keep the line
DONE, LEFT = "━", "─"  # the bar's measured and remaining parts, apart without colour too


def clock(seconds: float) -> str:
    """``0:01:05``; days as ``2d 03:00:00``."""
    s = max(0, int(round(seconds)))
    days, s = divmod(s, 86400)
    text = f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{days}d {text.zfill(8)}" if days else text


def best_items(progress: StudyProgress, baseline: float | None,
               roofline: float | None) -> list[str]:
    """The best so far as items a line may break between: value, speedup, roofline
    fraction, then each ``key=value``."""
    best = progress.best
    if best is None or best.value is None:
        return ["best: no result yet"]
    items = [f"best {rate_text(best.value)} tok/s"]
    if baseline:
        items.append(f"x{best.value / baseline:.3f} vs baseline")
    if roofline:
        items.append(f"{best.value / roofline:.1%} of roofline")
    return items + [f"{k}={v}" for k, v in best.params.items()]


def describe_best(progress: StudyProgress, baseline: float | None, roofline: float | None) -> str:
    """"best 61.2 tok/s (x1.340 vs baseline, 63.0% of roofline) tile_m=16 ..." or
    "no result yet"."""
    items = best_items(progress, baseline, roofline)
    if progress.best is None or progress.best.value is None:
        return "no result yet"
    n_figures = 1 + bool(baseline) + bool(roofline)
    head, cfg = items[:n_figures], " ".join(items[n_figures:])
    if len(head) > 1:
        return f"{head[0]} ({', '.join(head[1:])}) {cfg}"
    return f"{head[0]} {cfg}"


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


def detail_items(progress: StudyProgress, budget: Budget, wall_s: float) -> list[str]:
    """Measurement time against its budget, then the counts a user checks for trouble."""
    items = describe_time(progress, budget, wall_s).split(", ")
    items += [f"{progress.infeasible:,} infeasible skipped", f"{progress.failed:,} failed"]
    if progress.repeats:
        items.append(f"{progress.repeats:,} repeats served")
    if progress.held:  # one item per trial: a line breaks between them
        items += describe_held(progress.held).split("; ")
    return items


def eta_s(progress: StudyProgress, start: StudyProgress, budget: Budget,
          wall_s: float) -> float | None:
    """Seconds left at this run's measured rate: the first budget to run out (count,
    virtual or wall time) decides; None before this run measured anything."""
    done = progress.measured - start.measured
    if done <= 0 or wall_s <= 0:
        return None
    left: list[float] = []
    if budget.n_measurements is not None:
        left.append(max(0, budget.n_measurements - progress.measured) * wall_s / done)
    if budget.time_s is not None:
        if budget.wall_time:
            left.append(max(0.0, budget.time_s - wall_s))
        elif (spent := progress.virtual_s - start.virtual_s) > 0:
            left.append(max(0.0, budget.time_s - progress.virtual_s) * wall_s / spent)
    return min(left) if left else None


def count_text(measured: int, total: int | None) -> str:
    return f"{measured:,}/{total:,}" if total is not None else f"{measured:,}"


def bar_line(width: int, measured: int, total: int | None, elapsed_s: float,
             eta: float | None) -> Text:
    """``measurements ━━━━━━╺━━━━ 12/300 0:00:05 ETA 0:01:30`` in ``width`` columns: the bar
    takes what the figures leave, then the label goes, then the bar."""
    figures = f"{count_text(measured, total)} {clock(elapsed_s)} ETA " + (
        clock(eta) if eta is not None else "-:--:--")
    for label in ("measurements ", ""):
        room = width - len(label) - len(figures) - 2
        if total is not None and room >= MIN_BAR:
            bar_width = min(room, 60)
            done = round(bar_width * min(1.0, measured / total)) if total else bar_width
            line = Text(label, style="bold")
            line.append(DONE * done, style="bar.finished" if done == bar_width
                        else "bar.complete")
            line.append(LEFT * (bar_width - done), style="bar.back")
            line.append(" " + figures)
            return line
    return Text(("measurements " if len(figures) + 13 <= width else "") + figures)


@dataclass(frozen=True)
class _Shown:
    """What the display shows; replaced whole on each update, read by the redraw thread."""

    measured: int
    best: list[str]
    detail: list[str]
    eta: float | None
    at: float  # monotonic time of the update, to count the ETA down between updates


class _Display:
    """The live lines, laid out at each redraw for the width the terminal has then."""

    def __init__(self, view: ProgressView) -> None:
        self.view = view

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(20, options.max_width)
        shown = self.view.shown
        now = time.monotonic()
        eta = None if shown.eta is None else max(0.0, shown.eta - (now - shown.at))
        lines = [bar_line(width, shown.measured, self.view.budget.n_measurements,
                          now - self.view.started, eta)]
        lines += [Text(s) for s in wrap_items(shown.best, width, sep=" ", first="  ",
                                              indent="    ")]
        lines += [Text(s) for s in wrap_items(shown.detail, width, first="  ", indent="    ")]
        for line in lines:
            line.no_wrap = True
            line.overflow = "crop"  # nothing is wider than the line; a guard, not a layout
        yield Group(*lines)


class ProgressView:
    """Callable with a StudyProgress; shows measurements against the budget, the elapsed
    time and the ETA, the best so far with its speedup, and what went wrong."""

    def __init__(
        self,
        budget: Budget,
        baseline: Any = None,
        roofline: float | None = None,
        console: Console | None = None,
        enabled: bool = True,
        start: StudyProgress | None = None,
    ) -> None:
        self.budget = budget
        self.baseline_fn = baseline if callable(baseline) else (lambda: baseline)
        self.roofline = roofline
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.start = start or StudyProgress()  # what the study held before this run
        self.started = time.monotonic()
        self.interactive = enabled and self.console.is_terminal
        self.shown = _Shown(self.start.measured, ["best: no result yet"], [], None,
                            self.started)
        self._live: Live | None = None
        self._last_line = 0.0

    def __enter__(self) -> ProgressView:
        if self.interactive:
            self._live = Live(_Display(self), console=self.console, refresh_per_second=4,
                              transient=False)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.stop()

    def __call__(self, progress: StudyProgress) -> None:
        if not self.enabled:
            return
        self._report_failure(progress)
        now = time.monotonic()
        wall = now - self.started
        best = best_items(progress, self.baseline_fn(), self.roofline)
        detail = detail_items(progress, self.budget, wall)
        eta = eta_s(progress, self.start, self.budget, wall)
        self.shown = _Shown(progress.measured, best, detail, eta, now)
        if self._live is not None:
            return
        total = self.budget.n_measurements
        if now - self._last_line >= PLAIN_EVERY_S or progress.measured == total:
            self._last_line = now
            when = clock(wall) + (f", ETA {clock(eta)}" if eta is not None else "")
            print(f"[{count_text(progress.measured, total)} measured, {when}] "
                  f"{describe_best(progress, self.baseline_fn(), self.roofline)} | "
                  f"{', '.join(detail[:2])} | {', '.join(detail[2:])}", file=sys.stderr)

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
