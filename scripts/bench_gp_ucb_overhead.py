#!/usr/bin/env python
"""GPUCBSampler overhead: seconds per suggestion after N completed trials, and peak memory.

The N trials are distinct random feasible configs valued by the simulator's
noise-free cost (tokens/s), added to an in-memory study; then the sampler is
asked ``--asks`` times (each ask told with its simulated value, so N grows by
one per ask). Reports the median, mean and max wall time per suggestion (by
default the sampler fits its hyperparameters on every ask below 300 completed
trials and on every 3rd above, where the max is a fit) and the process's peak
resident memory (ru_maxrss). ``--kwargs`` passes sampler arguments.

    python scripts/bench_gp_ucb_overhead.py --spec studies/qwen25_7b_decode_910b2.json --n 200
    python scripts/bench_gp_ucb_overhead.py --spec studies/qwen25_7b_decode_910b2_compile.json \
        --n 1000 --asks 7 --kwargs '{"refit_every": 1}'
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time

import numpy as np
import optuna

from aoe_optuna.bench.exhaustive import simulator_costs
from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.loader import load_spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True)
    ap.add_argument("--n", type=int, default=200, help="completed trials before timing")
    ap.add_argument("--asks", type=int, default=7, help="asks timed (>= 4 covers a refit)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kwargs", type=json.loads, default={},
                    help='GPUCBSampler arguments as a JSON object, e.g. \'{"refit_every": 1}\'')
    args = ap.parse_args()

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    spec = load_spec(args.spec)
    space, backend = spec.space, make_backend(spec)

    def tokens_per_s(rows: np.ndarray) -> np.ndarray:
        return 1.0 / simulator_costs(space, spec.workload, backend, rows)

    t0 = time.perf_counter()
    rows = space.sample_feasible(args.n, np.random.default_rng(args.seed))
    values = tokens_per_s(rows)
    dists = space.distributions()
    sampler = GPUCBSampler(space=space, seed=args.seed, workload=spec.workload,
                           profile=spec.profile,  # as a study made by aoe-tune gives it
                           **args.kwargs)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for row, value in zip(rows, values, strict=True):
        study.add_trial(optuna.trial.create_trial(params=space.config(row), distributions=dists,
                                                  value=float(value)))
    print(f"{space.n_feasible:,} feasible configs; {args.n} trials added "
          f"in {time.perf_counter() - t0:.1f} s")
    times = []
    for _ in range(args.asks):
        t = time.perf_counter()
        trial = study.ask(dists)
        times.append(time.perf_counter() - t)
        study.tell(trial, float(tokens_per_s(space.index(trial.params)[None, :])[0]))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    later = times[1:] or times
    print(f"seconds per suggestion at {args.n}..{args.n + args.asks - 1} completed: "
          f"median {statistics.median(times):.3f}, mean after the first "
          f"{statistics.mean(later):.3f}, max after the first {max(later):.3f} "
          f"(first {times[0]:.3f}: enumeration/encoding cache and a cold fit)")
    print(f"peak resident memory {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
