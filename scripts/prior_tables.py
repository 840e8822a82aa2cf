"""The tables of docs/benchmarks/priors.md from the bench runs of its pairs.

For every pair of ``../shared/spaces`` (each direction: the target replayed with the
other device's recording as its prior) it reads the runs ``aoe-tune bench --out DIR``
wrote for the four samplers (gp-ucb with the prior, with it shuffled, without it, TPE)
and prints two markdown tables: per sampler, the median number of measurements to
within 2% of the optimum and the mean best/opt at each budget; and, paired per seed
against gp-ucb without the prior, W/T/L and the mean of the per-seed ratios.
``--simulator``: the same for the two studies of ``studies/prior_chips`` with the
shipped 910B2 simulator as the prior, to 99% of the optimum's tokens/s.

    python scripts/prior_tables.py --runs /tmp/prior40 [--seeds 0-39]
    python scripts/prior_tables.py --simulator --runs /tmp/prior_chips40
    python scripts/prior_tables.py --runs /tmp/kb_bench --pair SPEC=KB.json [--pair ...]

``--pair SPACE=PRIOR``: other pairs (a spec and the knowledge base or spec that is its
prior: to 99% of the optimum; a recording and its prior recording: to within 2%).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from aoe_optuna.bench.compare import WITHIN_2, ratios
from aoe_optuna.bench.metrics import measurements_to_reach, median_reach
from aoe_optuna.bench.subcommand import exhaustive_of, runs_of, seed_range

SPACES = Path(__file__).resolve().parents[2] / "shared" / "spaces"
PAIRS = [("gemm_RTX_2080_Ti", "gemm_RTX_3060_laptop"),
         ("gemm_RTX_3060_laptop", "gemm_RTX_2080_Ti"),
         ("convolution_RTX_2080_Ti", "convolution_RTX_3060_laptop"),
         ("convolution_RTX_3060_laptop", "convolution_RTX_2080_Ti"),
         ("dedispersion_milo_A100", "dedispersion_milo_A6000"),
         ("dedispersion_milo_A6000", "dedispersion_milo_A100")]
SAMPLERS = [("gp-ucb", "gp-ucb, prior"), ("gp-ucb [prior shuffled]", "gp-ucb, prior shuffled"),
            ("gp-ucb [prior off]", "gp-ucb, no prior"), ("tpe", "tpe")]
CHIPS = Path(__file__).resolve().parents[1] / "studies"
CHIP_PAIRS = [("prior_chips/qwen25_7b_decode_catlass_910b4", "qwen25_7b_decode_catlass_910b2"),
              ("prior_chips/qwen25_7b_decode_catlass_other_memory",
               "qwen25_7b_decode_catlass_910b2")]
BUDGETS = (25, 50, 100)


def _reach(x: float) -> str:
    return ">100" if not np.isfinite(x) else f"{x:g}"


def _seeds(seeds: list[int]) -> str:
    return f"{len(seeds)} ({seeds[0]}-{seeds[-1]})" if seeds else "0"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, action="append", required=True,
                    help="an aoe-tune bench --out folder (repeatable)")
    ap.add_argument("--seeds", type=seed_range, default=None, help="LO-HI (default: all)")
    ap.add_argument("--spaces", type=Path, default=SPACES)
    ap.add_argument("--simulator", action="store_true",
                    help="the studies/prior_chips pairs, to 99%% of the optimum")
    ap.add_argument("--pair", action="append", default=None, metavar="SPACE=PRIOR",
                    help="a space and its prior as the bench ran them (repeatable)")
    args = ap.parse_args()
    if args.pair:
        pairs = [tuple(p.split("=", 1)) for p in args.pair]
        spec = not pairs[0][0].endswith(".gz")
        reach_at, reach_name = (0.99, "to 99%") if spec else (WITHIN_2, "to within 2%")
    elif args.simulator:
        pairs = [(str(CHIPS / f"{t}.json"), str(CHIPS / f"{p}.json")) for t, p in CHIP_PAIRS]
        reach_at, reach_name = 0.99, "to 99%"
    else:
        pairs = [(str(args.spaces / f"{t}.json.gz"), str(args.spaces / f"{p}.json.gz"))
                 for t, p in PAIRS]
        reach_at, reach_name = WITHIN_2, "to within 2%"
    per_sampler, paired = [], []
    for space, prior_space in pairs:
        target, prior = (Path(p).name.split(".")[0] for p in (space, prior_space))
        space, prior_space = str(Path(space).resolve()), str(Path(prior_space).resolve())
        optimum = exhaustive_of(space).optimum
        runs = {label: runs_of(args.runs, label, max(BUDGETS), space, prior_space)
                for label, _ in SAMPLERS}
        if args.seeds is not None:
            runs = {k: {s: r for s, r in v.items() if s in args.seeds} for k, v in runs.items()}
        name = f"{target} ({prior})"
        reach = {label: median_reach([measurements_to_reach(r.costs, optimum, reach_at,
                                                            r.true_costs)
                                      for r in side.values()])
                 for label, side in runs.items() if side}
        score = {label: {b: ratios(side, optimum, b) for b in BUDGETS}
                 for label, side in runs.items() if side}
        for label, shown in SAMPLERS:
            if label not in score:
                continue
            means = " | ".join(f"{np.mean(list(score[label][b].values())):.3f}"
                               for b in BUDGETS)
            per_sampler.append(f"| {name} | {shown} | {len(runs[label])} | "
                               f"{_reach(reach[label])} | {means} |")
        base = "gp-ucb [prior off]"
        for label, shown in SAMPLERS[:2]:
            if label not in score or base not in score:
                continue
            seeds = sorted(set(runs[label]) & set(runs[base]))
            cells = []
            for b in BUDGETS:
                a = np.array([score[label][b][s] for s in seeds])
                n = np.array([score[base][b][s] for s in seeds])
                w, t, losses = int((a < n).sum()), int((a == n).sum()), int((a > n).sum())
                cells.append(f"{w}/{t}/{losses}, {np.mean(a / n):.3f}")
            both = {lab: median_reach([measurements_to_reach(runs[lab][s].costs, optimum,
                                                             reach_at, runs[lab][s].true_costs)
                                       for s in seeds]) for lab in (label, base)}
            paired.append(f"| {name} | {shown.split(', ')[-1]} | {_seeds(seeds)} | "
                          f"{_reach(both[label])} vs {_reach(both[base])} | "
                          + " | ".join(cells) + " |")
    print(f"| target (prior) | sampler | seeds | {reach_name} | mean best/opt at 25 | at 50 "
          "| at 100 |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(per_sampler))
    print()
    print(f"| target (prior) | against no prior | seeds | {reach_name}: median, with vs "
          "without | at 25: W/T/L, mean ratio | at 50 | at 100 |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(paired))


if __name__ == "__main__":
    main()
