"""Where a sampler's runs were when they missed the optimum: how near they came, and how it ranked.

For each bench run of a simulator spec that never measured the optimum, the
config it measured nearest to the optimum (fewest parameters changed, then
fewest index steps) and the rank that config's *measured* value had among the
run's measurements. A near miss at rank 1-4 means the local moves stood next
to the optimum and did not take the step; at rank 20 the near config was
measured but lost to noise and better-looking configs elsewhere:

    python scripts/missed_optimum.py --space studies/qwen25_7b_decode_910b2.json \\
      --runs /tmp/w/head120 --budget 100 [--ranks 5-10]

``--ranks LO-HI`` also lists the space's configs of those ranks (1 = the
optimum) and how many of them each sampler's runs measured, on average.

Configs are recovered from the runs' noise-free costs (each feasible config's
cost is recomputed on the simulator and looked up), so the spec's space is
enumerated once: use it on spaces of up to a few million feasible configs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aoe_optuna.bench.command import labels_of, runs_of, spec_runs_problem  # noqa: E402
from aoe_optuna.bench.runner import RunResult  # noqa: E402
from aoe_optuna.samplers.neighbourhood import steps_away  # noqa: E402
from aoe_optuna.space.search_space import SearchSpace  # noqa: E402

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
    """Noise-free cost -> position in ``costs`` (the feasible rows' costs, sorted)."""
    return {round(float(c), DIGITS): i for i, c in enumerate(costs) if np.isfinite(c)}


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


def parse_ranks(text: str | None) -> tuple[int, int] | None:
    """``"5-10"`` -> (5, 10); ValueError with a one-line reason."""
    if text is None:
        return None
    lo, sep, hi = text.partition("-")
    if not (sep and lo.isdigit() and hi.isdigit()) or not 1 <= int(lo) <= int(hi):
        raise ValueError(f"--ranks: expected LO-HI with 1 <= LO <= HI, got {text!r}")
    return int(lo), int(hi)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", required=True, help="the simulator study spec benched")
    ap.add_argument("--runs", action="append", required=True, type=Path,
                    help="a bench_samplers.py --out folder (repeatable)")
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--ranks", help="LO-HI: also count the configs of these space ranks measured")
    args = ap.parse_args(argv)
    try:
        ranks = parse_ranks(args.ranks)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bad = _bad_input(args)
    if bad:
        print(f"error: {bad}", file=sys.stderr)
        return 2
    labels = labels_of(args.runs, args.budget)
    if not labels:
        print(f"error: --runs: no run of at least {args.budget} measurements", file=sys.stderr)
        return 2
    print(f"{Path(args.space).name}: costing every feasible config ...", file=sys.stderr)
    space, rows, costs = feasible_by_cost(args.space)
    table = cost_table(costs)
    print(f"{Path(args.space).name}: optimum {space.config(rows[0])}")
    if ranks is not None:
        lo, hi = ranks[0], min(ranks[1], rows.shape[0])
        print(f"\nconfigs ranked {lo}-{hi} (cost / optimum, parameters changed from it):")
        for i in range(lo - 1, hi):
            print(f"  {i + 1}: {space.config(rows[i])}  {costs[i] / costs[0]:.4f}  "
                  f"{int((rows[i] != rows[0]).sum())}")
        for label in labels:
            by_seed = runs_of(args.runs, label, args.budget)
            counts = [measured_of_ranks(r, args.budget, table, lo, hi)
                      for r in by_seed.values() if r.true_costs]
            if counts:
                print(f"  {label}: {np.mean(counts):.2f} of them measured per run "
                      f"({len(counts)} runs)")
        print()
    print("| sampler | runs | missed the optimum | nearest: 1 parameter away | of those 1 step "
          "| measured rank of the nearest, median (quartiles) |\n|---|---|---|---|---|---|")
    for label in labels:
        by_seed = runs_of(args.runs, label, args.budget)
        misses = [m for r in by_seed.values() if r.true_costs
                  for m in [analyse(r, args.budget, table, rows, space)] if m is not None]
        one = [m for m in misses if m["changed"] == 1]
        ranks = np.array([m["rank"] for m in misses if m["rank"] > 0])
        q = (f"{np.median(ranks):.0f} ({np.percentile(ranks, 25):.0f}-"
             f"{np.percentile(ranks, 75):.0f})") if ranks.size else "-"
        print(f"| {label} | {len(by_seed)} | {len(misses)} | {len(one)} | "
              f"{sum(m['steps'] == 1 for m in one)} | {q} |")
    return 0


def _bad_input(args: argparse.Namespace) -> str | None:
    """The first bad argument, as a one-line message; None when all are usable."""
    problem = spec_runs_problem(args.runs, args.space)
    if problem:
        return problem
    if args.budget < 1:
        return f"--budget: expected >= 1, got {args.budget}"
    return None


if __name__ == "__main__":
    raise SystemExit(main())
