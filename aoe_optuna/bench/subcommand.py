"""What the analysis subcommands of ``aoe-tune bench`` share.

``compare``, ``noise-floor``, ``missed-optimum`` and ``diagnose`` read bench
``--out`` folders or rerun bench runs, and report. They check every argument
before reading or running anything; a bad one is one line on stderr that names
it and says what was expected, and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from aoe_optuna.bench.command import BenchError, exhaustive_for, load_runs
from aoe_optuna.bench.exhaustive import Exhaustive
from aoe_optuna.bench.seed_run import Case, RunResult


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise BenchError(f"{message} (see {self.prog} --help)")


def parser(name: str, doc: str, example: str) -> argparse.ArgumentParser:
    """The parser of ``aoe-tune bench NAME``: its module doc's first paragraph, an example."""
    return _Parser(prog=f"aoe-tune bench {name}", description=doc.split("\n\n")[0],
                   epilog=f"example:\n{example}",
                   formatter_class=argparse.RawDescriptionHelpFormatter)


def run(name: str, body: Callable[[list[str]], int], argv: Sequence[str] | None) -> int:
    """``body(argv)``, with a :class:`BenchError` as one line on stderr and exit code 2."""
    try:
        return body(list(sys.argv[1:] if argv is None else argv))
    except BenchError as exc:
        print(f"aoe-tune bench {name}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return value

    return parse


def seed_range(text: str) -> range:
    """An argparse type: ``LO-HI`` (or one seed) -> range(LO, HI + 1)."""
    lo, sep, hi = text.partition("-")
    hi = hi if sep else lo
    if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
        raise argparse.ArgumentTypeError(f"expected LO-HI with 0 <= LO <= HI, got {text!r}")
    return range(int(lo), int(hi) + 1)


def runs_folder(text: str) -> Path:
    """An argparse type: a bench ``--out`` folder (it holds ``runs.jsonl``)."""
    if not (Path(text) / "runs.jsonl").is_file():
        raise argparse.ArgumentTypeError(f"expected a bench --out folder with a runs.jsonl, "
                                         f"got {text!r}")
    return Path(text)


def space_file(text: str) -> str:
    """An argparse type: an existing study spec or recorded space file."""
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"expected a study spec or recorded space file, "
                                         f"got {text!r} (no such file)")
    return text


def simulator_spec(text: str) -> str:
    """An argparse type: an existing study spec (not a recorded space)."""
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"expected a simulator study spec, got {text!r} "
                                         "(no such file)")
    if Case.from_path(text).kind != "spec":
        raise argparse.ArgumentTypeError(f"expected a simulator study spec, got {text!r} "
                                         "(a recorded space)")
    return text


def exhaustive_of(space: str) -> Exhaustive:
    """The exhaustive optimum of ``--space`` (the bench's disk cache); BenchError if unusable."""
    try:
        return exhaustive_for(Case.from_path(space), None)
    except ValueError as exc:  # BenchError, SpecError, an unreadable recorded space
        raise BenchError(f"argument --space: {exc}") from None


def labels_of(folders: Sequence[Path], budget: int, space: str) -> list[str]:
    """The sampler labels with runs of ``space`` of at least ``budget`` in bench ``--out``
    folders, in order."""
    case = Case.from_path(space).name
    seen: dict[str, None] = {}
    for folder in folders:
        for r in load_runs(Path(folder) / "runs.jsonl"):
            if r.case == case and r.budget >= budget:
                seen.setdefault(r.sampler, None)
    return list(seen)


def runs_of(
    folders: Sequence[Path], label: str, budget: int, space: str, prior: str | None = None
) -> dict[int, RunResult]:
    """One sampler label's runs of ``space`` per seed over bench ``--out`` folders
    (``prior``: the runs made with that ``--prior-space``).

    A folder may hold runs of several spaces (one bench command, several
    ``--space``); only those of ``space`` count.

    A later folder's run of the same seed replaces an earlier one. Runs made
    for a smaller budget are left out; a run that stopped short of its budget
    (the infeasible cap) is kept, and the metrics hold its last value.
    """
    case = Case.from_path(space, prior=prior).name
    out: dict[int, RunResult] = {}
    for folder in folders:
        for r in load_runs(Path(folder) / "runs.jsonl"):
            if r.case == case and r.sampler == label and r.budget >= budget:
                out[r.seed] = r
    return out
