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
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aoe_optuna.bench import BenchError, exhaustive_for, runs_of  # noqa: E402
from aoe_optuna.bench.metrics import paired_comparison, ratio_curve  # noqa: E402
from aoe_optuna.bench.runner import Case  # noqa: E402


def ratios(folders: list[Path], label: str, optimum: float, budget: int) -> dict[int, float]:
    """best/opt at ``budget`` per seed for one sampler label."""
    return {seed: float(ratio_curve(r.costs, optimum, budget, r.true_costs)[-1])
            for seed, r in runs_of(folders, label, budget).items()}


def _seed_range(text: str) -> range:
    lo, _, hi = text.partition("-")
    try:
        return range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO-HI, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", required=True, help="the study spec or recorded space benched")
    ap.add_argument("--runs", action="append", required=True, type=Path,
                    help="a bench_samplers.py --out folder (repeatable)")
    ap.add_argument("--a", required=True, help="sampler label as in the bench's tables")
    ap.add_argument("--b", required=True, help="the label to compare against")
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--seeds", type=_seed_range, default=None, help="LO-HI, e.g. 80-119")
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.runs if not (f / "runs.jsonl").is_file()]
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
    a = ratios(args.runs, args.a, optimum, args.budget)
    b = ratios(args.runs, args.b, optimum, args.budget)
    seeds = sorted(set(a) & set(b) & (set(args.seeds) if args.seeds else set(a)))
    if not seeds:
        print(f"error: --a/--b: no seed has runs of both {args.a!r} and {args.b!r} "
              f"(labels found: {len(a)} and {len(b)} runs)", file=sys.stderr)
        return 2
    c = paired_comparison([a[s] for s in seeds], [b[s] for s in seeds],
                          np.random.default_rng(0))
    print(f"{len(seeds)} seeds ({seeds[0]}-{seeds[-1]}), best/opt at {args.budget}")
    print(f"  a: median {c['median_a']:.4f}  mean {c['mean_a']:.4f}  ({args.a})")
    print(f"  b: median {c['median_b']:.4f}  mean {c['mean_b']:.4f}  ({args.b})")
    print(f"  a vs b: {c['wins']} wins, {c['ties']} ties, {c['losses']} losses "
          f"(sign test p {c['sign_p']:.3f})")
    print(f"  median diff {c['median_diff']:+.4f} (90% bootstrap {c['median_diff_lo']:+.4f} "
          f"to {c['median_diff_hi']:+.4f}); mean diff {c['mean_diff']:+.4f} "
          f"({c['mean_diff_lo']:+.4f} to {c['mean_diff_hi']:+.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
