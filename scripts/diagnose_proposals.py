"""Where a sampler's measurements land: the noise-free quality of every proposal.

The benchmark reports the incumbent (the best *measured* config, what a user
exports); this script also says how good the proposals were, by their
noise-free simulator cost, so one can tell a sampler that never finds the
best configs from one that finds them and loses them to measurement noise
(the winner's curse). Simulator spec cases only (they have a noise-free cost).

Example::

    python scripts/diagnose_proposals.py --space studies/qwen25_7b_decode_910b2.json \\
        --sampler 'reinforce:{"policy": "studies/policies/qwen_holdout_seed.pt"}' \\
        --sampler gp-ucb --seeds 20 --budget 100
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aoe_optuna.bench.command import (  # noqa: E402
    INFEASIBLE_CAP_PER_MEASUREMENT,
    BenchError,
    exhaustive_for,
    parse_sampler,
    sampler_label,
)
from aoe_optuna.bench.metrics import incumbent_costs  # noqa: E402
from aoe_optuna.bench.runner import Case, Task, run_task  # noqa: E402

DECILES = 10


def proposal_quality(case: Case, name: str, kwargs: dict[str, Any], seeds: int, budget: int,
                     optimum: float, progress: bool = False,
                     first_seed: int = 0) -> dict[str, np.ndarray]:
    """Per seed: the incumbent's and the best measured config's true cost / optimum,
    how many measured configs were within 1%, and the median true cost / optimum of
    each tenth of the run's proposals (rows)."""
    width = max(1, budget // DECILES)
    out: dict[str, list[Any]] = {"incumbent": [], "best": [], "within_1pct": [], "deciles": []}
    for seed in range(first_seed, first_seed + seeds):
        task = Task(case, name, tuple(sorted(kwargs.items())), seed, budget,
                    INFEASIBLE_CAP_PER_MEASUREMENT * budget, name)
        r = run_task(task)
        if progress:
            print(f"  {name} seed {seed} ({seed - first_seed + 1}/{seeds}): "
                  f"{len(r.costs)} measured in {r.wall_s:.1f} s", file=sys.stderr)
        true = np.asarray(r.true_costs, dtype=float) / optimum
        out["incumbent"].append(incumbent_costs(r.costs, r.true_costs)[-1] / optimum)
        out["best"].append(true.min())
        out["within_1pct"].append(int((true < 1.01).sum()))
        out["deciles"].append([float(np.median(true[i * width:(i + 1) * width]))
                               for i in range(DECILES)])
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", required=True, help="simulator study spec (.json/.toml)")
    ap.add_argument("--sampler", action="append", required=True,
                    help="registry name, optionally NAME:JSON kwargs (repeatable)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seeds run from here (fresh seeds to confirm a setting chosen on others)")
    ap.add_argument("--budget", type=int, default=100)
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.budget < DECILES or args.first_seed < 0:
        print(f"error: --seeds: expected >= 1, --budget: expected >= {DECILES}, --first-seed: "
              f"expected >= 0 (got {args.seeds}, {args.budget}, {args.first_seed})",
              file=sys.stderr)
        return 2
    if not Path(args.space).is_file():
        print(f"error: {args.space}: no such study spec", file=sys.stderr)
        return 2
    case = Case.from_path(args.space)
    if case.kind != "spec":
        print(f"error: {args.space}: expected a simulator study spec, got a recorded space",
              file=sys.stderr)
        return 2
    try:
        samplers = [parse_sampler(s) for s in args.sampler]
        exhaustive = exhaustive_for(case, None)  # the bench's cached exhaustive optimum
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    optimum = exhaustive.optimum
    finite = exhaustive.costs[np.isfinite(exhaustive.costs)]
    print(f"{case.name}: {exhaustive.n_feasible:,} feasible; feasible-set median cost/opt "
          f"{np.median(finite) / optimum:.3f}; within 1%: {exhaustive.count_within(0.01)}")
    width = args.budget // DECILES
    header = " ".join(f"{i * width + 1}-{(i + 1) * width}" for i in range(DECILES))
    for name, given in samplers:
        label = sampler_label(name, given)
        kwargs = {k: v for k, v in given.items() if not k.startswith("_")}
        q = proposal_quality(case, name, kwargs, args.seeds, args.budget, optimum, True,
                             args.first_seed)
        print(f"\n{label} ({args.seeds} seeds, {args.budget} measurements)")
        print(f"  incumbent (best measured) true/opt: median {np.median(q['incumbent']):.4f} "
              f"mean {np.mean(q['incumbent']):.4f}")
        print(f"  best config measured, true/opt:     median {np.median(q['best']):.4f} "
              f"mean {np.mean(q['best']):.4f}")
        print(f"  configs measured within 1%: median {np.median(q['within_1pct']):.1f}")
        print(f"  median true/opt of the proposals, per tenth of the run ({header}):")
        print("   " + " ".join(f"{d:.3f}" for d in np.median(q["deciles"], axis=0)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
