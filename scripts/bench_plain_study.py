"""GPUCBSampler against Optuna's TPE on recorded tuning spaces run as plain studies.

No spec, no SearchSpace: each recorded Kernel Tuner space (../shared/spaces)
becomes an ordinary Optuna objective that suggests one categorical parameter
per tunable and looks the config up in the recording. A config outside the
recording (or one that failed there) is told as FAIL and not charged; a run
stops after ``--valid`` measurements or ``--max-asks`` proposals. The figure
is the mean best/opt (recorded time of the best measured config over the
space's optimum; 1.0 is the optimum) over seeds, both samplers side by side,
with the proposals each made (failed ones included) and the share of them
outside the recording: uncharged here, a wasted compile in a real study.

    .venv/bin/python scripts/bench_plain_study.py --valid 100 --seeds 10 \\
        --samplers gp-ucb,gp-ucb-vote,tpe gemm_RTX_2080_Ti convolution_milo_A4000
    .venv/bin/python scripts/bench_plain_study.py --samplers gp-ucb-gain,tpe gemm_RTX_2080_Ti
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import botorch
import numpy as np
import optuna
import torch
from optuna.samplers import BaseSampler, TPESampler
from optuna.trial import TrialState

from aoe_optuna.backends.replay.kt_cache import RecordedSpace, read_cache
from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.samplers.reinforce import ReinforceSampler

SPACES = Path(__file__).resolve().parents[1].parent / "shared" / "spaces"
SAMPLERS: dict[str, Callable[[int], BaseSampler]] = {
    "gp-ucb": lambda seed: GPUCBSampler(seed=seed),
    # P(success) as a vote of nearby outcomes, weighting UCB: the default with a spec
    "gp-ucb-vote": lambda seed: GPUCBSampler(seed=seed, failures="vote"),
    # P(success) weighting UCB (far floor) instead of the chance constraint
    "gp-ucb-success": lambda seed: GPUCBSampler(seed=seed, failures={"weighting": "success"}),
    "gp-ucb-gain": lambda seed: GPUCBSampler(seed=seed, failures={"weighting": "gain"}),
    "reinforce": lambda seed: ReinforceSampler(seed=seed),
    "tpe": lambda seed: TPESampler(seed=seed),
}


def run(
    recorded: RecordedSpace, sampler: BaseSampler, valid: int, max_asks: int
) -> tuple[float, int, int]:
    """Best recorded time over the optimum after ``valid`` measurements, asks, failed asks."""
    table = {c: v for c, v in zip(recorded.configs, recorded.values, strict=True)
             if np.isfinite(v)}
    optimum = min(table.values())
    names = recorded.varying
    fixed = recorded.fixed
    study = optuna.create_study(direction="minimize", sampler=sampler)
    measured, best, asks, failed = 0, np.inf, 0, 0
    for _ in range(max_asks):
        asks += 1
        trial = study.ask()
        params = {n: trial.suggest_categorical(n, list(recorded.tune_params[n])) for n in names}
        value = table.get(tuple({**fixed, **params}[k] for k in recorded.keys))
        if value is None:
            study.tell(trial, state=TrialState.FAIL)
            failed += 1
            continue
        study.tell(trial, float(value))
        measured += 1
        best = min(best, float(value))
        if measured >= valid:
            break
    return best / optimum, asks, failed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("spaces", nargs="+", help="recorded space names in ../shared/spaces")
    p.add_argument("--valid", type=int, default=100, help="measurements per run")
    p.add_argument("--max-asks", type=int, default=2000, help="proposals per run at most")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--samplers", default=",".join(SAMPLERS),
                   help=f"comma-separated, of {', '.join(SAMPLERS)} (default: all)")
    args = p.parse_args(argv)
    chosen = [s for s in args.samplers.split(",") if s]
    unknown = [s for s in chosen if s not in SAMPLERS]
    if unknown:
        p.error(f"--samplers: unknown {unknown}; expected some of {list(SAMPLERS)}")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    print(f"python {platform.python_version()}, optuna {optuna.__version__}, "
          f"torch {torch.__version__}, botorch {botorch.__version__}, "
          f"{args.valid} valid measurements, seeds 0..{args.seeds - 1}")
    print("| space | sampler | mean best/opt | per seed | mean asks | failed asks | wall s |")
    print("|---|---|---|---|---|---|---|")
    for name in args.spaces:
        recorded = read_cache(SPACES / f"{name}.json.gz")
        means = {}
        for label in chosen:
            make = SAMPLERS[label]
            start = time.monotonic()
            ratios, asks, failed = [], [], []
            for seed in range(args.seeds):
                ratio, n_asks, n_failed = run(recorded, make(seed), args.valid, args.max_asks)
                ratios.append(ratio)
                asks.append(n_asks)
                failed.append(n_failed)
                print(f"  {name} {label} seed {seed}: {ratios[-1]:.3f} "
                      f"({time.monotonic() - start:.0f} s)", file=sys.stderr, flush=True)
            means[label] = float(np.mean(ratios))
            print(f"| {name} | {label} | {means[label]:.3f} | "
                  f"{' '.join(f'{r:.3f}' for r in ratios)} | {np.mean(asks):.0f} | "
                  f"{sum(failed) / sum(asks):.0%} | {time.monotonic() - start:.0f} |",
                  flush=True)
        for label in (m for m in means if m.startswith("gp-ucb") and "tpe" in means):
            print(f"| {name} | tpe / {label} | {means['tpe'] / means[label]:.3f} | | | | |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
