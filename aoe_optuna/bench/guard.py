"""A sampler change against the stored per-seed reference: names every space it made worse.

Runs one sampler on a suite of spaces (the recorded dev spaces, the generated
failure spaces of ``failure_spaces``, simulator studies) for the suite's seeds
and budgets, and compares each run with the same seed's run in the reference
file (``docs/bench_reference.json``), seed for seed. A space is WORSE when the
mean of (now - reference) best/opt is above ``--tolerance`` and the 90%
bootstrap interval of that mean lies above zero: one seed moving between
basins is noise, most seeds moving is not. The bench is deterministic for a
seed, so unchanged code ties on every seed.

A suite with ``"noise": "recorded"`` runs its recorded spaces with their recorded
noise (``aoe-tune bench --noise recorded``), each seed its own draws.

Exit status: 0 when no space is worse, 1 when one is, 2 for a bad argument.
``--write`` stores the runs as the suite's new reference instead (after a
change whose costs were accepted, with its decision note).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aoe_optuna.bench.command import BenchError, exhaustive_for
from aoe_optuna.bench.compare import ratios
from aoe_optuna.bench.failure_spaces import RECIPES, build
from aoe_optuna.bench.metrics import paired_comparison
from aoe_optuna.bench.seed_run import Case, RunResult, Task, run_tasks
from aoe_optuna.bench.subcommand import at_least, parser, run

NAME = "guard"
EXAMPLE = """\
  # the short suite (four dev spaces, two generated failure spaces), about a minute
  aoe-tune bench guard --suite short
  # the full suite, then store it as the reference once the change is accepted
  aoe-tune bench guard --suite full --jobs 2 --out /tmp/guard
  aoe-tune bench guard --suite full --runs /tmp/guard --write"""
REPO = Path(__file__).resolve().parents[2]
DEFAULT_REFERENCE = REPO / "docs" / "bench_reference.json"
DEFAULT_SPACES = REPO.parent / "shared" / "spaces"
TOLERANCE = 0.005  # best/opt: below this a mean difference is not reported as worse
GENERATED = "generated:"  # a suite space made by failure_spaces from a dev space


@dataclass(frozen=True)
class Row:
    """One space at one budget: the paired comparison with the reference."""

    space: str
    budget: int
    stats: dict[str, float]

    @property
    def worse(self) -> bool:
        return self.stats["mean_diff"] > TOLERANCE and self.stats["mean_diff_lo"] > 0.0

    @property
    def better(self) -> bool:
        return self.stats["mean_diff"] < -TOLERANCE and self.stats["mean_diff_hi"] < 0.0


def resolve(space: str, spaces_dir: Path, generated_dir: Path) -> Path:
    """A suite entry as a file: ``generated:NAME`` is built, a dev space is under ``spaces_dir``,
    anything else is relative to the repository."""
    if space.startswith(GENERATED):
        name = space.removeprefix(GENERATED)
        recipe = next((r for r in RECIPES if r.name == name), None)
        if recipe is None:
            raise BenchError(f"reference space {space!r}: expected one of "
                             f"{[GENERATED + r.name for r in RECIPES]}")
        return build(recipe, spaces_dir, generated_dir)
    path = spaces_dir / space if space.endswith(".json.gz") else REPO / space
    if not path.is_file():
        raise BenchError(f"reference space {space!r}: expected the file {path}")
    return path


def run_suite(suite: dict[str, Any], spaces_dir: Path, out: Path, jobs: int) -> Path:
    """Bench the suite's sampler on its spaces, seeds and largest budget into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    top = max(suite["budgets"])
    tasks = []
    for space in suite["spaces"]:
        case = Case.from_path(resolve(space, spaces_dir, out / "spaces"),
                              noise=suite.get("noise", "none"))
        exhaustive_for(case, None)  # cached once, before the workers need it
        tasks += [Task(case, suite["sampler"], (), seed, top, 50 * top, suite["sampler"])
                  for seed in suite["seeds"]]
    log = out / "runs.jsonl"
    log.unlink(missing_ok=True)
    with log.open("a") as fh:
        for r in run_tasks(tasks, jobs=jobs):
            fh.write(json.dumps(r.to_dict()) + "\n")
    return out


def per_seed(runs_dir: Path, suite: dict[str, Any], spaces_dir: Path
             ) -> dict[str, dict[str, dict[str, float]]]:
    """{space: {budget: {seed: best/opt}}} of the suite's runs in ``runs_dir``."""
    from aoe_optuna.bench.command import load_runs

    runs = load_runs(runs_dir / "runs.jsonl")
    out: dict[str, dict[str, dict[str, float]]] = {}
    for space in suite["spaces"]:
        case = Case.from_path(resolve(space, spaces_dir, runs_dir / "spaces"),
                              noise=suite.get("noise", "none"))
        mine: dict[int, RunResult] = {r.seed: r for r in runs
                                      if r.case == case.name and r.sampler == suite["sampler"]}
        missing = sorted(set(suite["seeds"]) - set(mine))
        if missing:
            raise BenchError(f"--runs {runs_dir}: no run of {suite['sampler']} on {case.name} "
                             f"for seeds {missing}")
        optimum = exhaustive_for(case, None).optimum
        out[space] = {str(b): {str(s): round(v, 6) for s, v in
                               sorted(ratios(mine, optimum, b).items())}
                      for b in suite["budgets"]}
    return out


def compare(now: dict[str, Any], ref: dict[str, Any]) -> list[Row]:
    """Per space and budget, now against the reference on the seeds both have."""
    rows = []
    for space, budgets in now.items():
        for budget, seeds in budgets.items():
            base = ref.get(space, {}).get(budget)
            if base is None:
                raise BenchError(f"reference: no {space} at budget {budget} (record it with "
                                 "--write)")
            common = sorted(set(seeds) & set(base), key=int)
            stats = paired_comparison([seeds[s] for s in common], [base[s] for s in common],
                                      np.random.default_rng(0))
            rows.append(Row(space, int(budget), stats))
    return rows


def table(rows: Sequence[Row]) -> str:
    lines = ["| space | budget | seeds | reference mean | now mean | now W/T/L | "
             "mean diff (90% interval) | verdict |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r.stats
        verdict = "WORSE" if r.worse else "better" if r.better else "level"
        lines.append(f"| {r.space.removesuffix('.json.gz')} | {r.budget} | {s['n']} | "
                     f"{s['mean_b']:.3f} | {s['mean_a']:.3f} | {s['wins']}/{s['ties']}/"
                     f"{s['losses']} | {s['mean_diff']:+.3f} ({s['mean_diff_lo']:+.3f} to "
                     f"{s['mean_diff_hi']:+.3f}) | {verdict} |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    ap = parser(NAME, __doc__, EXAMPLE)
    ap.add_argument("--suite", default="short",
                    help="a suite of the reference file: 'short' (the slow test's) or 'full'")
    ap.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE,
                    help=f"per-seed reference file (default {DEFAULT_REFERENCE.relative_to(REPO)})")
    ap.add_argument("--spaces", type=Path, default=DEFAULT_SPACES,
                    help="folder of the recorded dev spaces (default ../shared/spaces)")
    ap.add_argument("--runs", type=Path, default=None,
                    help="compare the runs of this guard --out folder instead of running")
    ap.add_argument("--out", type=Path, default=None,
                    help="where the runs and generated spaces go (default: a temp folder)")
    ap.add_argument("--jobs", type=at_least(1), default=2, help="worker processes")
    ap.add_argument("--write", action="store_true",
                    help="store the runs as the suite's reference instead of comparing")
    return ap


def _versions() -> dict[str, str]:
    import optuna
    import torch

    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        commit = ""
    return {"commit": commit, "python": platform.python_version(), "optuna": optuna.__version__,
            "torch": torch.__version__, "numpy": np.__version__}


def _guard(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if not args.reference.is_file():
        raise BenchError(f"--reference {args.reference}: expected the reference file")
    doc = json.loads(args.reference.read_text())
    suite = doc.get("suites", {}).get(args.suite)
    if suite is None:
        raise BenchError(f"--suite {args.suite}: expected one of {sorted(doc.get('suites', {}))}")
    if args.runs is not None and not (args.runs / "runs.jsonl").is_file():
        raise BenchError(f"--runs {args.runs}: expected a guard --out folder with a runs.jsonl")
    if not args.spaces.is_dir():
        raise BenchError(f"--spaces {args.spaces}: expected the folder of the recorded spaces "
                         "(the project's shared/spaces beside the checkout)")
    if args.runs is None:
        import tempfile

        out = args.out or Path(tempfile.mkdtemp(prefix="aoe-guard-"))
        runs_dir = run_suite(suite, args.spaces, out, args.jobs)
    else:
        runs_dir = args.runs
    now = per_seed(runs_dir, suite, args.spaces)
    if args.write:
        suite["per_seed"] = now
        suite["recorded"] = {"date": dt.date.today().isoformat(), **_versions()}
        args.reference.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote suite {args.suite!r} of {args.reference}")
        return 0
    rows = compare(now, suite.get("per_seed", {}))
    rec = suite.get("recorded", {})
    print(f"{suite['sampler']} against the reference of {rec.get('date', '?')} "
          f"(commit {rec.get('commit', '?')}), paired per seed; runs in {runs_dir}")
    print(table(rows))
    worse = [f"{r.space} at {r.budget}" for r in rows if r.worse]
    if worse:
        print(f"WORSE beyond the noise: {', '.join(worse)}")
        return 1
    print("no space worse beyond the noise")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``aoe-tune bench guard``."""
    return run(NAME, _guard, argv)
