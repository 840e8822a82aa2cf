"""Lines that fit a terminal: broken between whole items, never inside a word.

A run's summary, its suggested commands and the live progress display print
names, paths and ``key=value`` pairs that mean nothing when cut in half; a
terminal that wraps them, or a renderer that crops them, does exactly that.
These helpers break lines only where a reader (or a shell) expects a break.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence


def rate_text(value: float) -> str:
    """Four significant figures, whole numbers from 10,000 on (``85.06``, ``25,210``):
    a rate never reads as ``2.521e+04``."""
    return f"{value:,.4g}" if abs(value) < 10_000 else f"{value:,.0f}"


def wrap_items(items: Sequence[str], width: int, sep: str = ", ", first: str = "",
               indent: str = "  ") -> list[str]:
    """``first`` then ``items`` joined by ``sep``, broken only between two items; each
    continuation line starts with ``indent``. An item wider than the line gets a line of
    its own (the terminal wraps it; nothing is dropped)."""
    tail, space = sep.rstrip(), (" " if sep.endswith(" ") else "")
    lines: list[str] = []
    line, has_item = first, False
    for i, item in enumerate(items):
        piece = item + (tail if i < len(items) - 1 else "")
        candidate = line + (space if has_item else "") + piece
        if (has_item or line.strip()) and len(candidate) > width:
            lines.append(line.rstrip())
            line = indent + piece
        else:
            line = candidate
        has_item = True
    lines.append(line.rstrip())
    return lines


def command_words(command: str) -> list[str]:
    """The shell words of ``command``, an option kept together with its value."""
    words = [shlex.quote(w) for w in shlex.split(command)]
    grouped: list[str] = []
    for word in words:
        if grouped and grouped[-1].startswith("-") and " " not in grouped[-1] \
                and not word.startswith("-"):
            grouped[-1] += " " + word
        else:
            grouped.append(word)
    return grouped


def wrap_command(command: str, width: int, first: str = "  ", indent: str = "      ") -> list[str]:
    """``command`` as a shell takes it over several lines: each line but the last ends in
    `` \\``, an option and its value stay on one line, a quoted word is never split."""
    lines: list[str] = []
    line = first
    for word in command_words(command):
        if line.strip() and len(line) + 1 + len(word) + 2 > width:
            lines.append(line + " \\")
            line = indent + word
        else:
            line = line + (" " if line.strip() else "") + word
    lines.append(line)
    return lines


def join_command(lines: Sequence[str]) -> str:
    """The one-line command of :func:`wrap_command`'s lines (continuations joined)."""
    return " ".join(line.strip().removesuffix("\\").strip() for line in lines)
