"""Two samplers of a bench run, seed for seed: W/T/L, sign test, bootstrap intervals.

    python scripts/compare_runs.py --space studies/qwen25_7b_decode_910b2.json \
      --runs /tmp/w/head120 --a 'reinforce {"policy": "studies/policies/qwen_holdout_seed.pt"}' \
      --b gp-ucb --budget 100 [--seeds 80-119]

Reads the ``runs.jsonl`` of one or more ``bench_samplers.py --out`` folders
(``aoe_optuna.bench.runs_of``: a later folder's run of the same sampler label
and seed replaces an earlier one; runs made for a smaller budget are left
out), scores each run's incumbent at ``--budget`` by its noise-free cost /
the exhaustive optimum (``aoe_optuna.bench.metrics.ratio_curve``), and
compares the two labels on the seeds both have. On the simulator the noise of
a config is a fixed function of (seed, config), so the pairs share their
noise and a tie means both kept the same config.

``--a-runs``/``--b-runs`` take one side's runs from their own folders (two
versions of the code under the same label); ``--expected`` scores each run
by the incumbent it would expect if its configs were measured afresh
(``metrics.expected_incumbent``, the runs' own noise; simulator specs only),
which removes the luck of the one noise draw (``scripts/noise_floor.py``).
When either side has failed measurements, their counts are compared too.

    python scripts/compare_runs.py --space studies/qwen25_7b_decode_910b2_hidden.json \
      --a-runs /tmp/w/new --b-runs /tmp/w/old --a reinforce --b reinforce --budget 500
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aoe_optuna.bench.command import BenchError, exhaustive_for, runs_of  # noqa: E402
from aoe_optuna.bench.metrics import (  # noqa: E402
    effective_noise,
    expected_incumbent,
    paired_comparison,
    ratio_curve,
)
from aoe_optuna.bench.runner import Case, RunResult  # noqa: E402

EXPECTED_DRAWS = 2000


def ratios(runs: dict[int, RunResult], optimum: float, budget: int) -> dict[int, float]:
    """best/opt at ``budget`` per seed."""
    return {seed: float(ratio_curve(r.costs, optimum, budget, r.true_costs)[-1])
            for seed, r in runs.items()}


def expected_ratios(runs: dict[int, RunResult], optimum: float, budget: int,
                    sigma: float) -> dict[int, float]:
    """Per seed: the expected incumbent / optimum of the configs measured by ``budget``."""
    return {seed: expected_incumbent(r.true_costs[:budget], sigma,
                                     np.random.default_rng(seed), EXPECTED_DRAWS) / optimum
            for seed, r in runs.items()}


def failed(runs: dict[int, RunResult], budget: int) -> dict[int, int]:
    """Failed measurements per seed among the first ``budget``."""
    return {seed: int(np.isnan(np.asarray(r.costs[:budget], dtype=float)).sum())
            for seed, r in runs.items()}


def _seed_range(text: str) -> range:
    lo, _, hi = text.partition("-")
    try:
        return range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO-HI, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", required=True, help="the study spec or recorded space benched")
    ap.add_argument("--runs", action="append", default=[], type=Path,
                    help="a bench_samplers.py --out folder (repeatable)")
    ap.add_argument("--a-runs", action="append", default=[], type=Path,
                    help="folder(s) for --a only (default: --runs)")
    ap.add_argument("--b-runs", action="append", default=[], type=Path,
                    help="folder(s) for --b only (default: --runs)")
    ap.add_argument("--a", required=True, help="sampler label as in the bench's tables")
    ap.add_argument("--b", required=True, help="the label to compare against")
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--seeds", type=_seed_range, default=None, help="LO-HI, e.g. 80-119")
    ap.add_argument("--expected", action="store_true",
                    help="score by the expected incumbent (simulator specs)")
    args = ap.parse_args(argv)
    a_dirs, b_dirs = args.a_runs or args.runs, args.b_runs or args.runs
    if not a_dirs or not b_dirs:
        print("error: --runs: expected a bench --out folder (or --a-runs and --b-runs)",
              file=sys.stderr)
        return 2
    missing = [str(f) for f in (*a_dirs, *b_dirs) if not (f / "runs.jsonl").is_file()]
    if missing:
        print(f"error: {missing[0]}: no runs.jsonl (expected a bench --out folder)",
              file=sys.stderr)
        return 2
    if not Path(args.space).is_file():
        print(f"error: {args.space}: no such study spec or recorded space", file=sys.stderr)
        return 2
    try:
        optimum = exhaustive_for(Case.from_path(args.space), None).optimum
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    runs_a = runs_of(a_dirs, args.a, args.budget)
    runs_b = runs_of(b_dirs, args.b, args.budget)
    seeds = sorted(set(runs_a) & set(runs_b) & (set(args.seeds) if args.seeds else set(runs_a)))
    if not seeds:
        print(f"error: --a/--b: no seed has runs of both {args.a!r} and {args.b!r} "
              f"(labels found: {len(runs_a)} and {len(runs_b)} runs)", file=sys.stderr)
        return 2
    runs_a = {s: runs_a[s] for s in seeds}
    runs_b = {s: runs_b[s] for s in seeds}
    if args.expected:
        both = [*runs_a.values(), *runs_b.values()]
        if any(not r.true_costs for r in both):
            print(f"error: --expected: {args.space}: the runs have no noise-free costs "
                  "(expected runs of a simulator spec)", file=sys.stderr)
            return 2
        sigma = effective_noise(np.concatenate([r.costs[:args.budget] for r in both]),
                                np.concatenate([r.true_costs[:args.budget] for r in both]))
        a = expected_ratios(runs_a, optimum, args.budget, sigma)
        b = expected_ratios(runs_b, optimum, args.budget, sigma)
        metric = f"expected incumbent / opt (noise {sigma:.2%})"
    else:
        a, b = ratios(runs_a, optimum, args.budget), ratios(runs_b, optimum, args.budget)
        metric = "best/opt"
    c = paired_comparison([a[s] for s in seeds], [b[s] for s in seeds],
                          np.random.default_rng(0))
    print(f"{len(seeds)} seeds ({seeds[0]}-{seeds[-1]}), {metric} at {args.budget}")
    print(f"  a: median {c['median_a']:.4f}  mean {c['mean_a']:.4f}  ({args.a})")
    print(f"  b: median {c['median_b']:.4f}  mean {c['mean_b']:.4f}  ({args.b})")
    print(f"  a vs b: {c['wins']} wins, {c['ties']} ties, {c['losses']} losses "
          f"(sign test p {c['sign_p']:.3f})")
    print(f"  median diff {c['median_diff']:+.4f} (90% bootstrap {c['median_diff_lo']:+.4f} "
          f"to {c['median_diff_hi']:+.4f}); mean diff {c['mean_diff']:+.4f} "
          f"({c['mean_diff_lo']:+.4f} to {c['mean_diff_hi']:+.4f})")
    fa, fb = failed(runs_a, args.budget), failed(runs_b, args.budget)
    if any(fa.values()) or any(fb.values()):
        d = np.array([fa[s] - fb[s] for s in seeds])
        print(f"  failed measurements per run: a {np.mean(list(fa.values())):.1f}, "
              f"b {np.mean(list(fb.values())):.1f}; a fewer in {(d < 0).sum()} seeds, "
              f"as many in {(d == 0).sum()}, more in {(d > 0).sum()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
