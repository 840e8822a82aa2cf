"""Two samplers of a bench run, seed for seed: W/T/L, sign test, bootstrap intervals.

Reads the ``runs.jsonl`` of one or more ``aoe-tune bench --out`` folders (a
later folder's run of the same sampler label and seed replaces an earlier one;
runs made for a smaller budget are left out), scores each run's incumbent at
``--budget`` by its noise-free cost / the exhaustive optimum
(``metrics.ratio_curve``), and compares the two labels on the seeds both have.
On the simulator the noise of a config is a fixed function of (seed, config),
so the pairs share their noise and a tie means both kept the same config.

``--a-runs``/``--b-runs`` take one side's runs from their own folders (two
versions of the code under the same label); ``--expected`` scores each run by
the incumbent it would expect if its configs were measured afresh
(``metrics.expected_incumbent``, the runs' own noise; simulator specs only),
which removes the luck of the one noise draw (``aoe-tune bench noise-floor``).
When either side has failed measurements, their counts are compared too.
``--prior-space``: the runs of ``--space`` benched with that prior
(``aoe-tune bench --prior-space``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from aoe_optuna.bench.command import BenchError
from aoe_optuna.bench.metrics import (
    effective_noise,
    expected_incumbent,
    measurements_to_reach,
    median_reach,
    paired_comparison,
    ratio_curve,
)
from aoe_optuna.bench.seed_run import RunResult
from aoe_optuna.bench.subcommand import (
    at_least,
    exhaustive_of,
    parser,
    run,
    runs_folder,
    runs_of,
    seed_range,
    space_file,
)

NAME = "compare"
EXAMPLE = """\
  aoe-tune bench compare --space studies/qwen25_7b_decode_910b2.json --runs /tmp/w/head120 \\
      --a 'reinforce {"policy": "studies/policies/qwen_holdout_seed.safetensors"}' --b gp-ucb \\
      --budget 100 --seeds 80-119
  # one label, two versions of the code
  aoe-tune bench compare --space studies/qwen25_7b_decode_910b2_hidden.json \\
      --a-runs /tmp/w/new --b-runs /tmp/w/old --a reinforce --b reinforce --budget 500"""
EXPECTED_DRAWS = 2000
WITHIN_2 = 1 / 1.02  # "within 2% of the optimum": cost <= 1.02 x the optimum's


def _reach(x: float) -> str:
    return "never (over half the seeds)" if not np.isfinite(x) else f"{x:g}"


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


def build_parser() -> argparse.ArgumentParser:
    ap = parser(NAME, __doc__, EXAMPLE)
    ap.add_argument("--space", required=True, type=space_file,
                    help="the study spec or recorded space benched")
    ap.add_argument("--prior-space", type=space_file, default=None,
                    help="the --prior-space the runs of --space were benched with")
    ap.add_argument("--runs", action="append", default=[], type=runs_folder,
                    help="an aoe-tune bench --out folder (repeatable)")
    ap.add_argument("--a-runs", action="append", default=[], type=runs_folder,
                    help="folder(s) for --a only (default: --runs)")
    ap.add_argument("--b-runs", action="append", default=[], type=runs_folder,
                    help="folder(s) for --b only (default: --runs)")
    ap.add_argument("--a", required=True, help="sampler label as in the bench's tables")
    ap.add_argument("--b", required=True, help="the label to compare against")
    ap.add_argument("--budget", type=at_least(1), default=100,
                    help="score the incumbent after this many measurements (default 100)")
    ap.add_argument("--seeds", type=seed_range, default=None,
                    help="LO-HI, e.g. 80-119 (default: every seed both labels have)")
    ap.add_argument("--expected", action="store_true",
                    help="score by the expected incumbent (simulator specs)")
    return ap


def _compare(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    a_dirs, b_dirs = args.a_runs or args.runs, args.b_runs or args.runs
    if not a_dirs or not b_dirs:
        raise BenchError("argument --runs: expected a bench --out folder "
                         "(or both --a-runs and --b-runs)")
    runs_a = runs_of(a_dirs, args.a, args.budget, args.space, args.prior_space)
    runs_b = runs_of(b_dirs, args.b, args.budget, args.space, args.prior_space)
    seeds = sorted(set(runs_a) & set(runs_b) & (set(args.seeds) if args.seeds else set(runs_a)))
    if not seeds:
        raise BenchError(f"--a/--b: expected a seed with runs of both {args.a!r} and "
                         f"{args.b!r} of at least {args.budget} measurements; no seed has "
                         f"both (labels found: {len(runs_a)} and {len(runs_b)} runs)")
    runs_a = {s: runs_a[s] for s in seeds}
    runs_b = {s: runs_b[s] for s in seeds}
    both = [*runs_a.values(), *runs_b.values()]
    if args.expected and any(not r.true_costs for r in both):
        raise BenchError(f"--expected: {args.space}: the runs have no noise-free costs "
                         "(expected runs of a simulator spec)")
    optimum = exhaustive_of(args.space).optimum  # the bench's cached exhaustive optimum
    if args.expected:
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
    reach = {name: median_reach([measurements_to_reach(r.costs, optimum, WITHIN_2,
                                                       r.true_costs) for r in side.values()])
             for name, side in (("a", runs_a), ("b", runs_b))}
    print(f"  measurements to within 2% of the optimum (median): a {_reach(reach['a'])}, "
          f"b {_reach(reach['b'])}")
    fa, fb = failed(runs_a, args.budget), failed(runs_b, args.budget)
    if any(fa.values()) or any(fb.values()):
        d = np.array([fa[s] - fb[s] for s in seeds])
        print(f"  failed measurements per run: a {np.mean(list(fa.values())):.1f}, "
              f"b {np.mean(list(fb.values())):.1f}; a fewer in {(d < 0).sum()} seeds, "
              f"as many in {(d == 0).sum()}, more in {(d > 0).sum()}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``aoe-tune bench compare``."""
    return run(NAME, _compare, argv)
