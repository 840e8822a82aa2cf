"""Lines of a run's output as they read unwrapped: the banner ("study NAME in STORAGE: N
configs ...; backend B") and the summary wrap at the console width, their continuation
lines indented, so a check of one line reads it joined to the lines it carries."""

from __future__ import annotations


def joined_lines(text: str) -> list[str]:
    """Each line with the indented lines after it joined on (one space between)."""
    out: list[str] = []
    for line in text.strip().splitlines():
        if out and line.startswith("  ") and out[-1].strip():
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out
