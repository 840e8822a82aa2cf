"""Benchmark the cpu backend: baseline vs. a searched config vs. numpy (OpenBLAS, 1 thread).

    python scripts/bench_cpu_backend.py [--spec studies/cpu_gemm.json] [--random 40] [--seed 0]

1. measures the spec's baseline config;
2. searches: ``--random`` feasible configs drawn uniformly, then one pass of
   coordinate search from the best (every choice of each parameter in turn,
   the others fixed), keeping configs whose accuracy loss is within the spec's
   ``accuracy.max_relative_error``;
3. re-measures baseline and best with a tighter timing policy, and times
   numpy's matmul of the same fp32 inputs on one OpenBLAS thread, interleaved
   over ``--rounds`` rounds (so a change in the machine's load hits all three
   alike; each figure is the median of its per-round medians), all in this
   one run, and prints GFLOP/s and ratios.

``--best '{"tile_m": 32, ...}'`` skips the search and compares that config.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from aoe_optuna.backends.cpu.backend import CpuBackend
from aoe_optuna.backends.cpu.driver import round_to_dtype
from aoe_optuna.backends.timing import TimingPolicy, time_call
from aoe_optuna.spec.loader import load_spec

SEARCH_TIMING = {"min_repeats": 3, "max_repeats": 20, "max_seconds": 0.3, "estimator": "median"}
# the median, as numpy's matmul is timed below: the three figures by one rule
FINAL_TIMING = {"min_repeats": 10, "max_repeats": 200, "max_seconds": 3.0,
                "rel_precision": 0.01, "estimator": "median"}


def key(cfg: dict) -> tuple:
    return tuple(sorted(cfg.items()))


def search_best(space, gemm, baseline: dict, tolerance: float, n_random: int, seed: int) -> dict:
    """Random feasible configs, then one coordinate pass from the best; accurate ones only."""
    seen: dict[tuple, float] = {}
    started = time.perf_counter()
    with CpuBackend(**SEARCH_TIMING) as search:
        def gflops(cfg: dict) -> float:
            full = space.full_config(cfg)
            if key(full) not in seen:
                m = search.measure(full, gemm)
                good = m.ok and m.extra["accuracy_loss"] <= tolerance
                seen[key(full)] = m.extra["gflops"] if good else 0.0
            return seen[key(full)]

        print(f"baseline (search timing): {gflops(baseline):.2f} GFLOP/s")
        rng = np.random.default_rng(seed)
        for cfg in space.configs(space.sample_feasible(n_random, rng)):
            gflops(cfg)
        best = max((dict(k) for k in seen), key=lambda c: seen[key(c)])
        print(f"best of {len(seen)} random: {seen[key(best)]:.2f} GFLOP/s")
        for param in space.params:
            for value in param.choices:
                cand = {**best, param.name: value}
                if not space.is_feasible(space.index(cand)[None, :])[0]:
                    continue
                if gflops(cand) > seen[key(best)]:
                    best = space.full_config(cand)
        print(f"after coordinate search ({len(seen)} configs measured, "
              f"{time.perf_counter() - started:.0f} s): {seen[key(best)]:.2f} GFLOP/s")
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec", default="studies/cpu_gemm.json")
    p.add_argument("--random", type=int, default=40, help="random feasible configs to try")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the final timing")
    p.add_argument("--best", default=None, help="JSON config to compare instead of searching")
    args = p.parse_args()

    spec = load_spec(args.spec)
    gemm = spec.workload.gemms[0]
    tolerance = spec.accuracy["max_relative_error"]
    space = spec.space
    print(f"machine: {platform.processor() or platform.machine()}, nproc={os.cpu_count()}")
    print(subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout
          .splitlines()[0])
    print(f"GEMM {gemm.M}x{gemm.K}x{gemm.N} {gemm.dtype} (fp32 compute), "
          f"{gemm.flops / 1e9:.3f} GFLOP; accuracy tolerance {tolerance}")

    baseline = space.full_config(spec.baseline)
    if args.best is not None:
        best = space.full_config(json.loads(args.best))
    else:
        best = search_best(space, gemm, baseline, tolerance, args.random, args.seed)
    rng = np.random.default_rng(0)
    A = round_to_dtype(rng.standard_normal((gemm.M, gemm.K), dtype=np.float32), gemm.dtype)
    B = round_to_dtype(rng.standard_normal((gemm.K, gemm.N), dtype=np.float32), gemm.dtype)
    numpy_policy = TimingPolicy(warmup=2, min_repeats=10, max_repeats=500, rel_precision=0.01,
                                max_seconds=3.0)
    samples: dict[str, list[float]] = {"baseline": [], "best found": [], "numpy matmul": []}
    spreads: dict[str, list[float]] = {name: [] for name in samples}
    with CpuBackend(**FINAL_TIMING) as final, threadpool_limits(limits=1):
        blas = [(i["internal_api"], i.get("version"), i.get("architecture"), i["num_threads"])
                for i in threadpool_info()]
        for _ in range(args.rounds):
            for name, cfg in (("baseline", baseline), ("best found", best)):
                m = final.measure(cfg, gemm)
                assert m.ok, m.reason
                samples[name].append(m.latency_s)
                spreads[name].append(m.spread or 0.0)
            t = time_call(lambda: np.matmul(A, B), numpy_policy)
            samples["numpy matmul"].append(t.median_s)
            spreads["numpy matmul"].append(t.spread)
    print(f"numpy BLAS: {blas}")
    rows = [(name, float(np.median(samples[name])), float(np.median(spreads[name])))
            for name in samples]
    numpy_s = rows[2][1]

    base_s = rows[0][1]
    print("\n| config | latency ms | GFLOP/s | spread | vs baseline | vs numpy |")
    print("|---|---|---|---|---|---|")
    for name, lat, spread in rows:
        print(f"| {name} | {lat * 1e3:.2f} | {gemm.flops / lat / 1e9:.2f} | {spread:.1%} | "
              f"{base_s / lat:.2f}x | {numpy_s / lat:.2f}x |")
    print("\nbest config:", json.dumps({k: best[k] for k in space.names}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
