"""`aoe-tune operators`' progress lines break between words on a terminal, as the
run summary does, and stay whole lines in a log."""

from __future__ import annotations

import io

import pytest

from aoe_optuna.cli.operators import _say

LINE = ("[  12/60] down_proj      1x3584x18944         3 measured, best    128.74 us "
        "(79.8% roofline); end to end 82.73 tokens/s")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_progress_line_breaks_between_words(
        monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setenv("COLUMNS", "60")
    _say(LINE)
    lines = terminal.getvalue().splitlines()
    assert len(lines) >= 2 and all(len(line) <= 60 for line in lines), lines
    assert all(line.startswith("  ") for line in lines[1:]), lines
    assert " ".join(lines).split() == LINE.split()  # every word kept, in order
    for number in ("128.74", "79.8%", "82.73", "1x3584x18944"):
        assert sum(number in line for line in lines) == 1  # never split across lines


def test_in_a_log_a_progress_line_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    monkeypatch.setenv("COLUMNS", "60")
    _say(LINE)
    assert log.getvalue() == LINE + "\n"
