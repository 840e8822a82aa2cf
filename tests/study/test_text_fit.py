"""Lines broken between whole items: the summary, the next commands, the live display."""

from __future__ import annotations

import shlex
from datetime import datetime, timedelta
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from rich.console import Console

from aoe_optuna.study.report.progress import bar_line, clock, count_text, detail_items, eta_s
from aoe_optuna.study.report.summary import Summary, print_summary
from aoe_optuna.study.report.text_fit import join_command, rate_text, wrap_command, wrap_items
from aoe_optuna.study.run.loop import Budget, StudyProgress

LONG_NAME = "GemmKernel-Ascend910B2-gemm512x512x512-compile-quant-cpu"


def test_items_break_between_items_only() -> None:
    items = [f"key{i}=value{i}" for i in range(12)]
    lines = wrap_items(items, 40, first="best config: ")
    assert all(len(line) <= 40 for line in lines) and len(lines) > 2
    assert " ".join(lines).replace(",", " ").split()[2:] == items  # in order, none cut
    assert lines[1].startswith("  key")
    assert wrap_items(["a", "b"], 80) == ["a, b"]
    assert wrap_items(["x" * 90, "b"], 80) == ["x" * 90 + ",", "  b"]  # too wide: its own line


def test_a_command_wraps_the_way_a_shell_reads_it() -> None:
    command = (f"aoe-tune export --storage sqlite:////home/user/runs/aoe.db --study-name "
               f"{LONG_NAME} --kb '/home/user/my runs/aoe_kb.json' --output /tmp/k.cpp")
    for width in (80, 100):
        lines = wrap_command(command, width)
        assert all(len(line) <= width for line in lines), lines
        assert all(line.endswith(" \\") for line in lines[:-1])
        assert shlex.split(join_command(lines)) == shlex.split(command)
        assert any(line.strip().startswith(f"--study-name {LONG_NAME}") for line in lines)
    assert wrap_command("optuna-dashboard sqlite:///a.db", 80) == [
        "  optuna-dashboard sqlite:///a.db"]


@pytest.mark.parametrize("width", [80, 100])
def test_the_summary_fits_the_terminal(width: int, tmp_path) -> None:
    summary = Summary(study_name=LONG_NAME, storage_url="sqlite:////home/user/runs/aoe.db",
                      baseline=3059.0, best=25210.4, best_params={
                          "tile_m": 16, "tile_n": 16, "tile_k": 128, "pipeline": 0,
                          "l1_prefetch": 1, "output_align": 1, "opt_level": "O3",
                          "schedule": "latency", "unroll_factor": 8, "layout": "col_major",
                          "quantization": False},
                      best_number=2, roofline=None, measured=1234, infeasible=56, repeats=7,
                      failed=12, virtual_s=3606.0, wall_s=19.8,
                      stop_reason="reached 50 measurements", folder=Path("/home/user/runs"))
    console = Console(width=width, record=True, file=open(tmp_path / "out", "w"))  # noqa: SIM115
    print_summary(summary, console)
    lines = console.export_text().splitlines()
    assert all(len(line) <= width for line in lines), "\n".join(lines)
    title = f"study {LONG_NAME}: reached 50 measurements"
    # the name whole, the reason on a line of its own where both do not fit
    assert lines[:2] == [f"study {LONG_NAME}:", "  reached 50 measurements"] \
        if len(title) > width else lines[0] == title
    text = "\n".join(lines)
    assert "failures 12," in text and "25,210" in text and "e+04" not in text
    steps = lines[lines.index("next:") + 1:]
    export = [steps[0]]
    while export[-1].endswith("\\"):
        export.append(steps[len(export)])
    assert shlex.split(join_command(export))[:4] == [
        "aoe-tune", "export", "--storage", "sqlite:////home/user/runs/aoe.db"]


def test_the_bar_line_keeps_its_figures_at_any_width() -> None:
    for width in (40, 80, 100, 200):
        line = bar_line(width, 1_234, 1_000_000_000, 75.0, 3_725.0).plain
        assert len(line) <= width, line
        assert line.endswith("1,234/1,000,000,000 0:01:15 ETA 1:02:05"), line
    assert bar_line(80, 0, 300, 0.0, None).plain.endswith("0/300 0:00:00 ETA -:--:--")
    half = bar_line(80, 150, 300, 1.0, 1.0).plain
    assert half.count("━") == half.count("─")  # half measured, half left
    assert count_text(5, None) == "5" and clock(90_000) == "1d 01:00:00"
    assert rate_text(85.0612) == "85.06" and rate_text(25210.4) == "25,210"


def test_the_eta_comes_from_this_runs_rate_and_the_first_budget_to_end() -> None:
    start = StudyProgress(measured=40, virtual_s=100.0)
    now = StudyProgress(measured=50, virtual_s=200.0)
    assert eta_s(start, start, Budget(n_measurements=100), 10.0) is None  # nothing measured yet
    assert eta_s(now, start, Budget(n_measurements=100), 10.0) == pytest.approx(50.0)
    # 100 virtual s per 10 wall s; 300 virtual s left: 30 s, before the 50 measurements
    assert eta_s(now, start, Budget(n_measurements=100, time_s=500.0), 10.0) == \
        pytest.approx(30.0)
    assert eta_s(now, start, Budget(n_measurements=100, time_s=12.0, wall_time=True),
                 10.0) == pytest.approx(2.0)


def test_trials_held_elsewhere_wrap_one_per_line_at_80_columns() -> None:
    held = []
    for number in (100, 101, 102):
        t = optuna.trial.create_trial(state=TrialState.RUNNING, params={}, distributions={})
        t.number = number
        t.datetime_start = datetime.now() - timedelta(seconds=185)
        held.append(t)
    items = detail_items(StudyProgress(measured=5, held=held), Budget(n_measurements=10), 12.0)
    lines = wrap_items(items, 80, first="  ", indent="    ")
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[1].startswith("    held elsewhere: trial 100 RUNNING 3m05s, ")
    assert [line.split()[0] for line in lines[2:]] == ["trial", "trial"]


def test_a_cpu_winners_certified_line_fits_80_columns() -> None:
    """Six-digit rates with a wide interval: the interval and the first measurement are
    separate items, so no line is wider than 80 and no number is cut by the terminal."""
    from aoe_optuna.study.race.outcome import Certified
    from aoe_optuna.study.report.summary import certified_items

    won = Certified(winner=14, value=153_957.0, interval=(52_958.0, 447_578.0),
                    first_value=164_402.0, ties=(), open=(), slower=(), pcs=1.0, spent=2,
                    rounds=2, contenders=(14,), epsilon=0.01, done=True, reason="no rival")
    lines = wrap_items(certified_items(won), 80)
    assert all(len(line) <= 80 for line in lines)
    assert lines[0] == "certified: trial 14 at 153,957 [52,958, 447,578] (95% interval),"
    assert lines[1].startswith("  first measured 164,402,")
