"""The end-of-run summary: a table on the terminal, the same as a dashboard note."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import optuna
from rich.console import Console
from rich.table import Table

from aoe_optuna.spec.export_target import ExportKind
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.spec.stored import ROOFLINE_ATTR
from aoe_optuna.study.create import baseline_trial, best_trial
from aoe_optuna.study.race.outcome import Certified
from aoe_optuna.study.report import dashboard_writers
from aoe_optuna.study.report.dashboard_plot import save_convergence_plot
from aoe_optuna.study.report.prior_trust import latest_trust, trust_text
from aoe_optuna.study.report.text_fit import rate_text, wrap_command, wrap_items
from aoe_optuna.study.run.loop import RunResult
from aoe_optuna.study.run.time_split import TimeSplit


@dataclass
class Summary:
    study_name: str
    storage_url: str
    baseline: float | None
    best: float | None
    best_params: dict
    best_number: int | None
    roofline: float | None
    measured: int
    infeasible: int
    repeats: int
    failed: int
    virtual_s: float
    wall_s: float
    stop_reason: str
    # how the best config leaves the study (see export_kind); the default for a
    # Summary made by hand: the npu backend's kernel
    export_kind: ExportKind = "kernel"
    folder: Path = field(default_factory=Path.cwd)  # where the run was started
    # a simulated run's tokens/s error band (aoe_optuna.calibration), None for measurements
    band: str | None = None
    time_split: list[str] = field(default_factory=list)  # where the wall-clock went
    # the winner the race certified (None: not raced, e.g. the run was interrupted)
    certified: Certified | None = None
    certified_params: dict = field(default_factory=dict)
    prior: str | None = None  # the sampler's prior and how much its model trusts it now

    @property
    def speedup(self) -> float | None:
        if self.best and self.baseline:
            return self.best / self.baseline
        return None

    def fraction(self, value: float | None) -> str:
        if value is None or not self.roofline:
            return "-"
        return f"{value / self.roofline:.1%}"


def summarise(
    study: optuna.Study, spec: StudySpec, result: RunResult, storage_url: str,
    folder: Path | None = None, certified: Certified | None = None,
) -> Summary:
    """``folder``: where the run was started (default the working folder), taken before
    the run by a caller whose working folder may be deleted while it measures;
    ``certified``: the race's verdict."""
    base = baseline_trial(study, spec)
    best = best_trial(study)
    winner_params = {} if certified is None else next(
        (dict(t.params) for t in study.get_trials(deepcopy=False)
         if t.number == certified.winner), {})
    p = result.progress
    trust = latest_trust(study.get_trials(deepcopy=False))
    return Summary(
        study_name=study.study_name,
        storage_url=absolute_storage_url(storage_url),
        baseline=None if base is None else base.value,
        best=None if best is None else best.value,
        best_params={} if best is None else dict(best.params),
        best_number=None if best is None else best.number,
        roofline=study.user_attrs.get(ROOFLINE_ATTR),
        measured=p.measured,
        infeasible=p.infeasible,
        repeats=p.repeats,
        failed=p.failed,
        virtual_s=p.virtual_s,
        wall_s=result.wall_s,
        stop_reason=result.stop_reason,
        export_kind=export_kind(spec),
        folder=folder if folder is not None else Path.cwd(),
        band=simulated_band(spec, None if best is None else best.value),
        time_split=TimeSplit.of(study.get_trials(deepcopy=False),
                                modelled=spec.exact_model).items(),
        certified=certified,
        certified_params=winner_params,
        prior=None if trust is None else trust_text(trust),
    )



def simulated_band(spec: StudySpec, tokens_per_s: float | None) -> str | None:
    """The held-out error band of a simulated tokens/s (the step's GEMMs at the time it
    implies); None where the figures are measurements or there is none yet."""
    if not spec.exact_model or not tokens_per_s:
        return None
    from aoe_optuna.calibration.workload_band import tokens_band

    return tokens_band(spec.workload, spec.profile, tokens_per_s).text()


def absolute_storage_url(url: str) -> str:
    """``url`` with a relative SQLite or journal file made absolute, so that the printed
    next steps work from any folder; other URLs as they are."""
    prefix = "sqlite:///"
    if url.startswith(prefix):
        path = url[len(prefix):]
        if path and path != ":memory:" and not path.startswith("/"):
            return prefix + os.path.abspath(path)
        return url
    if "://" not in url and url.endswith(".log"):
        return os.path.abspath(url)
    return url


def export_kind(spec: StudySpec) -> ExportKind:
    """Which export takes this study's best config to a kernel
    (:mod:`aoe_optuna.spec.export_target`): ``kernel``, ``catlass``, ``kb`` or ``none``."""
    return spec.export.kind


def _fmt(v: float | None) -> str:
    return "-" if v is None else rate_text(v)


def _best_label(s: Summary) -> str:
    return "best" if s.best_number is None else f"best (trial {s.best_number})"


def _speedup(value: float, s: Summary) -> str:
    return f"{value / s.baseline:.3f}" if s.baseline else "-"


def certified_items(c: Certified) -> list[str]:
    """The race's verdict as the summary's items: the winner and its interval, its ties,
    the probability of a correct selection, the re-timings it spent."""
    lo, hi = c.interval
    if not c.spent:
        return [f"winner trial {c.winner}: {c.reason}",
                f"ties within {c.epsilon:.0%}: " + (", ".join(map(str, c.ties)) or "none")]
    # the interval and the first measurement as two items: at 80 columns, with six-digit
    # rates, the two together are wider than the line and a terminal would cut a number
    items = [f"certified: trial {c.winner} at {rate_text(c.value)} [{rate_text(lo)}, "
             f"{rate_text(hi)}] (95% interval)",
             f"first measured {rate_text(c.first_value)}",
             f"ties within {c.epsilon:.0%}: " + (", ".join(map(str, c.ties)) or "none")
             + (f" ({len(c.open)} not separated)" if c.open else ""),
             f"P(correct selection within {c.epsilon:.0%}) "
             + ("not known yet" if c.pcs is None else f">= {c.pcs:.2f}"),
             # three items, so that a narrow terminal's line breaks between them
             f"race: {c.spent} re-timings (not counted in the measurements)",
             f"{c.rounds} rounds", c.reason]
    if not c.done:
        items.append("not finished: the same command resumes it")
    return items


def next_steps(s: Summary) -> list[str]:
    """The commands that take the best config out of the study; absolute paths, so they
    run from any folder. The first one is the export (the dashboard note repeats it)."""
    storage, name = shlex.quote(s.storage_url), shlex.quote(s.study_name)
    if s.best_number is None:  # nothing to take out yet: the dashboard shows the failures
        return [f"optuna-dashboard {storage}"]
    if s.export_kind == "none":
        return [f"optuna best-trial --storage {storage} --study-name {name}",
                f"optuna-dashboard {storage}"]
    export = f"aoe-tune export --storage {storage} --study-name {name} --kb " + shlex.quote(
        str(s.folder / "aoe_kb.json"))
    if s.export_kind == "kernel":
        export += " --output " + shlex.quote(str(s.folder / "optimized_kernel.cpp"))
    elif s.export_kind == "catlass":
        export += " --catlass-header " + shlex.quote(str(s.folder / "aoe_catlass_gemm.h"))
    return [export, f"optuna-dashboard {storage}"]


def print_summary(s: Summary, console: Console | None = None) -> None:
    """The table, the counts, the best config and the next commands, each line broken
    only between whole items (a command with a shell's `` \\``) to fit the console."""
    console = console or Console()
    width = console.width

    def say(lines: list[str]) -> None:
        for line in lines:
            console.print(line, soft_wrap=True, markup=False, highlight=False)

    say(wrap_items([f"study {s.study_name}:", s.stop_reason], width, sep=" "))
    table = Table()
    table.add_column("")
    table.add_column("tokens/s", justify="right")
    table.add_column("speedup", justify="right")
    table.add_column("of roofline", justify="right")
    table.add_row("baseline", _fmt(s.baseline), "1.000" if s.baseline else "-",
                  s.fraction(s.baseline))
    sp = s.speedup
    table.add_row(_best_label(s), _fmt(s.best),
                  "-" if sp is None else f"{sp:.3f}", s.fraction(s.best))
    c = s.certified
    if c is not None and c.spent:
        table.add_row(f"certified (trial {c.winner})", _fmt(c.value), _speedup(c.value, s),
                      s.fraction(c.value))
    table.add_row("roofline", _fmt(s.roofline), "", "100%")
    console.print(table)
    if c is not None:
        say(wrap_items(certified_items(c), width))
    if s.band:
        say(wrap_items(s.band.split(", "), width, first="simulated figures: tokens/s band "))
    say(wrap_items([f"measurements {s.measured:,}",
                    f"infeasible proposals skipped {s.infeasible:,}",
                    f"repeated proposals served from storage {s.repeats:,}",
                    f"failures {s.failed:,}", f"measurement time {s.virtual_s:,.0f} s",
                    f"wall {s.wall_s:,.1f} s"], width))
    if s.time_split:
        say(wrap_items(s.time_split, width, first="time: "))
    if s.certified_params and s.certified is not None and s.certified.winner != s.best_number:
        say(wrap_items([f"{k}={v}" for k, v in s.certified_params.items()], width,
                       first="certified config: "))
    if s.prior:
        # a long name (a knowledge base's) keeps its line; what the model makes of it follows
        name, colon, trust = s.prior.partition(": ")
        if colon and len(f"prior: {s.prior}") > width:
            say(wrap_items([f"{name}:"], width, first="prior: "))
            say(wrap_items(trust.split(", "), width, first="  "))
        else:
            say(wrap_items(s.prior.split(", "), width, first="prior: "))
    if s.best_params:
        say(wrap_items([f"{k}={v}" for k, v in s.best_params.items()], width,
                       first="best config: "))
    console.print("next:")
    for line in next_steps(s):
        say(wrap_command(line, width))


def summary_markdown(s: Summary) -> str:
    """The summary as the study's dashboard note."""
    sp = s.speedup
    rows = [
        "| | tokens/s | speedup | of roofline |",
        "|---|---:|---:|---:|",
        f"| baseline | {_fmt(s.baseline)} | 1.000 | {s.fraction(s.baseline)} |",
        f"| {_best_label(s)} | {_fmt(s.best)} | "
        f"{'-' if sp is None else f'{sp:.3f}'} | {s.fraction(s.best)} |",
        *([f"| certified (trial {s.certified.winner}) | {_fmt(s.certified.value)} | "
           f"{_speedup(s.certified.value, s)} | {s.fraction(s.certified.value)} |"]
          if s.certified is not None and s.certified.spent else []),
        f"| roofline | {_fmt(s.roofline)} | | 100% |",
    ]
    cfg = ", ".join(f"`{k}={v}`" for k, v in s.best_params.items()) or "none yet"
    return "\n".join(
        [
            f"# {s.study_name}",
            "",
            f"Last run: {s.stop_reason}.",
            "",
            *rows,
            "",
            *([f"Simulated figures: tokens/s band {s.band}.", ""] if s.band else []),
            *([f"Winner: {'; '.join(certified_items(s.certified))}.", ""]
              if s.certified is not None else []),
            f"Best config: {cfg}",
            "",
            f"Measurements {s.measured}, infeasible proposals skipped {s.infeasible}, "
            f"repeats served from storage {s.repeats}, failures {s.failed}, "
            f"measurement time {s.virtual_s:,.0f} s.",
            "",
            *([f"Time: {', '.join(s.time_split)}.", ""] if s.time_split else []),
            *([f"Prior: {s.prior}.", ""] if s.prior else []),
            "Next: `" + next_steps(s)[0] + "`",
        ]
    )


def save_dashboard_note(study: optuna.Study, s: Summary) -> None:
    """The summary as the study's dashboard note, and beside it the convergence plot
    (:mod:`aoe_optuna.study.report.dashboard_plot`); both skipped without the `dashboard` extra."""
    save_note = dashboard_writers.save_note()
    if save_note is None:
        return
    save_note(study, summary_markdown(s))
    save_convergence_plot(study, s.roofline, s.baseline)
