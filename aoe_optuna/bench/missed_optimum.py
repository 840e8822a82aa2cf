"""Where a sampler's runs were when they missed the optimum: how near they came, and how it ranked.

For each bench run of a simulator spec that never measured the optimum, the
config it measured nearest to the optimum (fewest parameters changed, then
fewest index steps) and the rank that config's *measured* value had among the
run's measurements. A near miss at rank 1-4 means the local moves stood next
to the optimum and did not take the step; at rank 20 the near config was
measured but lost to noise and better-looking configs elsewhere.

``--ranks LO-HI`` also lists the space's configs of those ranks (1 = the
optimum) and how many of them each sampler's runs measured, on average.

Configs are recovered from the runs' noise-free costs (each feasible config's
cost is recomputed on the simulator and looked up), so the spec's space is
enumerated once: use it on spaces of up to a few million feasible configs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aoe_optuna.bench.command import BenchError
from aoe_optuna.bench.seed_run import RunResult
from aoe_optuna.bench.subcommand import (
    at_least,
    labels_of,
    parser,
    run,
    runs_folder,
    runs_of,
    simulator_spec,
)
from aoe_optuna.samplers.neighbourhood import steps_away
from aoe_optuna.space.search_space import SearchSpace

NAME = "missed-optimum"
EXAMPLE = """\
  aoe-tune bench missed-optimum --space studies/qwen25_7b_decode_910b2.json \\
      --runs /tmp/w/head120 --budget 100 --ranks 5-10"""
DIGITS = 15  # costs are matched after rounding to this many decimals (seconds per token)


def feasible_by_cost(spec_path: str | Path) -> tuple[SearchSpace, np.ndarray, np.ndarray]:
    """The spec's space, its feasible index rows and their noise-free costs, cheapest first."""
    from aoe_optuna.bench.exhaustive import simulator_costs
    from aoe_optuna.spec.backend import make_backend
    from aoe_optuna.spec.loader import load_spec

    spec = load_spec(spec_path)
    rows = np.concatenate(list(spec.space.iter_feasible(500_000)))
    costs = simulator_costs(spec.space, spec.workload, make_backend(spec), rows)
    order = np.argsort(costs, kind="stable")
    return spec.space, rows[order], costs[order]


def cost_table(costs: np.ndarray) -> dict[float, int]:
    """Noise-free cost -> position in ``costs`` (the feasible rows' costs, sorted).

    Configs of equal cost share the first position: one tied with the optimum is optimal.
    """
    table: dict[float, int] = {}
    for i, c in enumerate(costs):
        if np.isfinite(c):
            table.setdefault(round(float(c), DIGITS), i)
    return table


def near_miss(rows: np.ndarray, optimum: np.ndarray,
              space: SearchSpace) -> tuple[int, int, int]:
    """(parameters changed, index steps, position in ``rows``) of the row nearest ``optimum``."""
    changed = (rows != optimum[None, :]).sum(axis=1)
    steps = steps_away(space, optimum, rows)
    best = int(np.lexsort((steps, changed))[0])
    return int(changed[best]), int(steps[best]), best


def analyse(run: RunResult, budget: int, table: dict[float, int], rows: np.ndarray,
            space: SearchSpace) -> dict[str, int] | None:
    """None when the run measured the optimum; else its near miss (see the module doc)."""
    ids = [table.get(round(float(c), DIGITS)) for c in run.true_costs[:budget]]
    keep = [k for k, i in enumerate(ids) if i is not None]
    found = np.array([ids[k] for k in keep], dtype=np.int64)
    if found.size and int(found.min()) == 0:
        return None
    if not found.size:
        return {"changed": -1, "steps": -1, "rank": -1}
    changed, steps, j = near_miss(rows[found], rows[0], space)
    measured = np.asarray(run.costs[:budget], dtype=float)[keep]
    rank = int((measured < measured[j]).sum()) + 1
    return {"changed": changed, "steps": steps, "rank": rank}


def measured_of_ranks(run: RunResult, budget: int, table: dict[float, int],
                      lo: int, hi: int) -> int:
    """How many configs of space ranks ``lo``..``hi`` (1 = the optimum) the run measured."""
    ids = {table.get(round(float(c), DIGITS)) for c in run.true_costs[:budget]}
    return sum(1 for i in ids if i is not None and lo - 1 <= i <= hi - 1)


def parse_ranks(text: str) -> tuple[int, int]:
    """An argparse type: ``"5-10"`` -> (5, 10)."""
    lo, sep, hi = text.partition("-")
    if not (sep and lo.isdigit() and hi.isdigit()) or not 1 <= int(lo) <= int(hi):
        raise argparse.ArgumentTypeError(f"expected LO-HI with 1 <= LO <= HI, got {text!r}")
    return int(lo), int(hi)


def _check_simulator(spec_path: str) -> None:
    """BenchError unless the spec loads and its backend has the noise-free ``latency()``."""
    from aoe_optuna.spec.backend import make_backend
    from aoe_optuna.spec.loader import load_spec

    try:
        spec = load_spec(spec_path)
        backend = make_backend(spec)
    except ValueError as exc:
        raise BenchError(f"argument --space: {exc}") from None
    if not hasattr(backend, "latency"):
        raise BenchError(f"argument --space: expected a spec of the simulator backend, got "
                         f"backend {spec.backend['name']!r} (no noise-free latency())")


def build_parser() -> argparse.ArgumentParser:
    ap = parser(NAME, __doc__, EXAMPLE)
    ap.add_argument("--space", required=True, type=simulator_spec,
                    help="the simulator study spec benched")
    ap.add_argument("--runs", action="append", required=True, type=runs_folder,
                    help="an aoe-tune bench --out folder (repeatable)")
    ap.add_argument("--budget", type=at_least(1), default=100,
                    help="look at the runs' first this many measurements (default 100)")
    ap.add_argument("--ranks", type=parse_ranks,
                    help="LO-HI: also count the configs of these space ranks measured")
    return ap


def _missed_optimum(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    _check_simulator(args.space)
    labels = labels_of(args.runs, args.budget, args.space)
    if not labels:
        raise BenchError(f"argument --runs: expected runs of at least {args.budget} "
                         f"measurements of {Path(args.space).name}; found none")
    print(f"{Path(args.space).name}: costing every feasible config ...", file=sys.stderr)
    space, rows, costs = feasible_by_cost(args.space)
    table = cost_table(costs)
    print(f"{Path(args.space).name}: optimum {space.config(rows[0])}")
    if args.ranks is not None:
        lo, hi = args.ranks[0], min(args.ranks[1], rows.shape[0])
        print(f"\nconfigs ranked {lo}-{hi} (cost / optimum, parameters changed from it):")
        for i in range(lo - 1, hi):
            print(f"  {i + 1}: {space.config(rows[i])}  {costs[i] / costs[0]:.4f}  "
                  f"{int((rows[i] != rows[0]).sum())}")
        for label in labels:
            by_seed = runs_of(args.runs, label, args.budget, args.space)
            counts = [measured_of_ranks(r, args.budget, table, lo, hi)
                      for r in by_seed.values() if r.true_costs]
            if counts:
                print(f"  {label}: {np.mean(counts):.2f} of them measured per run "
                      f"({len(counts)} runs)")
        print()
    print("| sampler | runs | missed the optimum | nearest: 1 parameter away | of those 1 step "
          "| measured rank of the nearest, median (quartiles) |\n|---|---|---|---|---|---|")
    for label in labels:
        by_seed = runs_of(args.runs, label, args.budget, args.space)
        misses = [m for r in by_seed.values() if r.true_costs
                  for m in [analyse(r, args.budget, table, rows, space)] if m is not None]
        one = [m for m in misses if m["changed"] == 1]
        ranks = np.array([m["rank"] for m in misses if m["rank"] > 0])
        q = (f"{np.median(ranks):.0f} ({np.percentile(ranks, 25):.0f}-"
             f"{np.percentile(ranks, 75):.0f})") if ranks.size else "-"
        print(f"| {label} | {len(by_seed)} | {len(misses)} | {len(one)} | "
              f"{sum(m['steps'] == 1 for m in one)} | {q} |")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``aoe-tune bench missed-optimum``."""
    return run(NAME, _missed_optimum, argv)
