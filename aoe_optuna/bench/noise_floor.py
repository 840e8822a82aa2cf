"""The noise floor of the bench's incumbent metric, and where each sampler's runs sit on it.

The bench scores a run by the noise-free cost of its incumbent, the config
that *measured* best. Under measurement noise that is not the best config
measured: every config measured near the optimum is one more chance for a
lucky draw to win (the winner's curse). This says how low the metric can go
at all, for a search that measures exactly the k best configs of the space,
and re-scores each run by the incumbent it would expect if its measured
configs were measured again (``metrics.incumbent_draws``), which removes the
luck of the one noise draw the run met.

The noise is the runs' own (``metrics.effective_noise``: the spread of
measured / noise-free cost over every measurement read), drawn log-normal and
independent per config; simulator spec cases only (a recorded space has no
noise-free cost).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from aoe_optuna.bench.command import BenchError
from aoe_optuna.bench.metrics import (
    effective_noise,
    incumbent_draws,
    paired_comparison,
    ratio_curve,
)
from aoe_optuna.bench.metrics import expected_incumbent as expected_cost
from aoe_optuna.bench.seed_run import Case, RunResult
from aoe_optuna.bench.subcommand import (
    at_least,
    exhaustive_of,
    labels_of,
    parser,
    run,
    runs_folder,
    runs_of,
    simulator_spec,
)

NAME = "noise-floor"
EXAMPLE = """\
  aoe-tune bench noise-floor --space studies/qwen25_7b_decode_910b2.json \\
      --runs /tmp/w/head120 --budget 100 \\
      --a 'reinforce {"policy": "studies/policies/qwen_holdout_seed.safetensors"}' --b gp-ucb"""
TOP_K = (1, 5, 10, 20, 50)  # oracle searches: measure exactly the k best configs
NEAR = (0.002, 0.005, 0.01, 0.02)  # "measured within x of the optimum" columns


def expected_incumbent(run: RunResult, budget: int, optimum: float, sigma: float,
                       rng: np.random.Generator, draws: int) -> float:
    """Mean over fresh noise of the incumbent's true cost / optimum, for one run's configs."""
    return expected_cost(run.true_costs[:budget], sigma, rng, draws) / optimum


def floor_rows(costs: np.ndarray, budget: int, sigma: float, rng: np.random.Generator,
               draws: int) -> list[tuple[int, float, float, float]]:
    """(k, median, mean, P90) of the incumbent / optimum when the k best configs are measured."""
    finite = np.sort(costs[np.isfinite(costs)])
    ks = sorted({k for k in (*TOP_K, budget) if k <= finite.size})
    rows = []
    for k in ks:
        r = incumbent_draws(finite[:k], sigma, rng, draws) / finite[0]
        rows.append((k, float(np.median(r)), float(r.mean()), float(np.percentile(r, 90))))
    return rows


def build_parser() -> argparse.ArgumentParser:
    ap = parser(NAME, __doc__, EXAMPLE)
    ap.add_argument("--space", required=True, type=simulator_spec,
                    help="the simulator study spec benched")
    ap.add_argument("--runs", action="append", required=True, type=runs_folder,
                    help="an aoe-tune bench --out folder (repeatable)")
    ap.add_argument("--budget", type=at_least(1), default=100,
                    help="score the runs after this many measurements (default 100)")
    ap.add_argument("--a", help="sampler label to compare (with --b) on the expected incumbent")
    ap.add_argument("--b", help="the label to compare against")
    ap.add_argument("--draws", type=at_least(1), default=2000,
                    help="noise draws per run (default 2000)")
    return ap


def _noise_floor(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if bool(args.a) != bool(args.b):
        raise BenchError("--a/--b: expected both labels or neither")
    labels = labels_of(args.runs, args.budget, args.space)
    runs = {label: runs_of(args.runs, label, args.budget, args.space) for label in labels}
    scored = {label: by_seed for label, by_seed in runs.items()
              if by_seed and all(r.true_costs for r in by_seed.values())}
    if not scored:
        raise BenchError(f"argument --runs: expected runs of at least {args.budget} "
                         "measurements with noise-free costs (bench runs of a simulator spec); "
                         "found none")
    if args.a and not set(scored.get(args.a, {})) & set(scored.get(args.b, {})):
        raise BenchError(f"--a/--b: expected a seed with runs of both {args.a!r} and {args.b!r}; "
                         f"no seed has both (labels: {', '.join(map(repr, scored))})")
    exhaustive = exhaustive_of(args.space)
    optimum = exhaustive.optimum
    pairs = [(r.costs[:args.budget], r.true_costs[:args.budget])
             for by_seed in scored.values() for r in by_seed.values()]
    sigma = effective_noise(np.concatenate([p[0] for p in pairs]),
                            np.concatenate([p[1] for p in pairs]))
    near = ", ".join(f"{exhaustive.count_within(f)} within {f:.1%}" for f in NEAR)
    print(f"{Case.from_path(args.space).name}: {exhaustive.n_feasible:,} feasible configs, {near}; "
          f"noise on the workload's cost {sigma:.2%} (log std over the runs' measurements)")
    rng = np.random.default_rng(0)
    print(f"\nmeasure exactly the k best configs once each (oracle search), incumbent true/opt "
          f"over {args.draws} noise draws:")
    print("| k | median | mean | P90 |\n|---|---|---|---|")
    for k, med, mean, p90 in floor_rows(exhaustive.costs, args.budget, sigma, rng, args.draws):
        print(f"| {k} | {med:.4f} | {mean:.4f} | {p90:.4f} |")
    print(f"\nthe runs at {args.budget} measurements (medians over seeds; expected = the same "
          "configs measured afresh):")
    head = " | ".join(f"within {f:.1%}" for f in NEAR)
    print(f"| sampler | seeds | incumbent median / mean | expected median / mean | optimum "
          f"measured | {head} |\n|---|---|---|---|---|{'---|' * len(NEAR)}")
    expected: dict[str, dict[int, float]] = {}
    for label, by_seed in scored.items():
        seeds = sorted(by_seed)
        real = [float(ratio_curve(by_seed[s].costs, optimum, args.budget,
                                  by_seed[s].true_costs)[-1]) for s in seeds]
        expected[label] = {s: expected_incumbent(by_seed[s], args.budget, optimum, sigma,
                                                 rng, args.draws) for s in seeds}
        exp = list(expected[label].values())
        true = [np.asarray(by_seed[s].true_costs[:args.budget], dtype=float) / optimum
                for s in seeds]
        found = np.mean([t.min() <= 1 + 1e-9 for t in true])
        counts = " | ".join(f"{np.median([(t <= 1 + f).sum() for t in true]):.0f}" for f in NEAR)
        print(f"| {label} | {len(seeds)} | {np.median(real):.4f} / {np.mean(real):.4f} | "
              f"{np.median(exp):.4f} / {np.mean(exp):.4f} | {found:.0%} | {counts} |")
    if args.a and args.b:
        a, b = expected[args.a], expected[args.b]
        seeds = sorted(set(a) & set(b))
        c = paired_comparison([a[s] for s in seeds], [b[s] for s in seeds],
                              np.random.default_rng(0))
        print(f"\nexpected incumbent, {args.a} vs {args.b}, {len(seeds)} seeds: {c['wins']} "
              f"wins, {c['ties']} ties, {c['losses']} losses (sign test p {c['sign_p']:.3f}); "
              f"median diff {c['median_diff']:+.4f} ({c['median_diff_lo']:+.4f} to "
              f"{c['median_diff_hi']:+.4f}), mean diff {c['mean_diff']:+.4f} "
              f"({c['mean_diff_lo']:+.4f} to {c['mean_diff_hi']:+.4f}), 90% bootstrap")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``aoe-tune bench noise-floor``."""
    return run(NAME, _noise_floor, argv)
