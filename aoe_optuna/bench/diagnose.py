"""Where a sampler's measurements land: the noise-free quality of every proposal.

The benchmark reports the incumbent (the best *measured* config, what a user
exports); this also says how good the proposals were, by their noise-free
simulator cost, so one can tell a sampler that never finds the best configs
from one that finds them and loses them to measurement noise (the winner's
curse). It reruns the bench's runs (same seeds, same noise) in this process;
simulator spec cases only (they have a noise-free cost).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from aoe_optuna.bench.command import (
    INFEASIBLE_CAP_PER_MEASUREMENT,
    BenchError,
    parse_sampler,
    sampler_label,
)
from aoe_optuna.bench.metrics import incumbent_costs
from aoe_optuna.bench.seed_run import Case, Task, build_case, run_task
from aoe_optuna.bench.subcommand import at_least, exhaustive_of, parser, run, simulator_spec

NAME = "diagnose"
EXAMPLE = """\
  aoe-tune bench diagnose --space studies/qwen25_7b_decode_910b2.json \\
      --sampler 'reinforce:{"policy": "studies/policies/qwen_holdout_seed.safetensors"}' \\
      --sampler gp-ucb --seeds 20 --budget 100"""
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


def _samplers(texts: list[str], case: Case, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """The ``--sampler`` items, each built once on the case's space to check it."""
    from aoe_optuna.samplers.registry import make_sampler

    try:
        built = build_case(case)
    except ValueError as exc:  # a spec that does not load
        raise BenchError(f"argument --space: {exc}") from None
    out = []
    for text in texts:
        name, given = parse_sampler(text)
        try:
            make_sampler(name, space=built.space, spec=built.spec, seed=seed,
                         **{k: v for k, v in given.items() if not k.startswith("_")})
        except (TypeError, ValueError) as exc:
            raise BenchError(f"argument --sampler {text!r}: {exc}") from None
        out.append((name, given))
    return out


def build_parser() -> argparse.ArgumentParser:
    ap = parser(NAME, __doc__, EXAMPLE)
    ap.add_argument("--space", required=True, type=simulator_spec,
                    help="simulator study spec (.json/.toml)")
    ap.add_argument("--sampler", action="append", required=True,
                    help="registry name, optionally NAME:JSON kwargs (repeatable)")
    ap.add_argument("--seeds", type=at_least(1), default=20, help="runs per sampler (default 20)")
    ap.add_argument("--first-seed", type=at_least(0), default=0,
                    help="seeds run from here (fresh seeds to confirm a setting chosen on others)")
    ap.add_argument("--budget", type=at_least(DECILES), default=100,
                    help="measurements per run (default 100)")
    return ap


def _diagnose(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    case = Case.from_path(args.space)
    samplers = _samplers(args.sampler, case, args.first_seed)
    exhaustive = exhaustive_of(args.space)  # the bench's cached exhaustive optimum
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


def main(argv: Sequence[str] | None = None) -> int:
    """``aoe-tune bench diagnose``."""
    return run(NAME, _diagnose, argv)
