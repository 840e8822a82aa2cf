"""Seconds per ReinforceSampler suggestion at N completed trials, on a study spec.

    python scripts/bench_reinforce_overhead.py studies/qwen25_7b_decode_910b2_compile.json \
        --trials 200 [--policy policy.safetensors] [--local 0.8] [--profile-after 800]

Runs an in-memory study with the product objective on the spec's simulator and
times ``sample_relative`` alone (study.ask + the sampler), per trial.
``--profile-after N`` also runs cProfile over the suggestions after the N-th
and prints where their time went (top functions by cumulative time, per
suggestion).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import numpy as np
import optuna

from aoe_optuna.samplers.reinforce import ReinforceSampler
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.objective import (
    Evaluator,
    MeasurementFailed,
    TuningObjective,
    suggest_config,
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("spec")
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policy", default=None)
    p.add_argument("--local", type=float, default=None,
                   help="share of local proposals (default: the sampler's, 0.8)")
    p.add_argument("--profile-after", type=int, default=None, metavar="N",
                   help="profile the suggestions after the N-th")
    args = p.parse_args()
    if args.profile_after is not None and not 0 <= args.profile_after < args.trials:
        p.error(f"--profile-after: expected 0..{args.trials - 1}, got {args.profile_after}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec = load_spec(args.spec)
    t0 = time.perf_counter()
    sampler = ReinforceSampler(space=spec.space, seed=args.seed, policy=args.policy,
                               workload=spec.workload, profile=spec.profile, local=args.local)
    setup = time.perf_counter() - t0
    roof = spec.workload.roofline_tokens_per_s(spec.profile)
    objective = TuningObjective(spec.space, Evaluator(spec.workload, make_backend(spec), roof))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    times, cpu = [], []
    profile = cProfile.Profile()
    for n in range(args.trials):
        profiled = args.profile_after is not None and n >= args.profile_after
        t, c = time.perf_counter(), time.process_time()
        if profiled:
            profile.enable()
        trial = study.ask()
        suggest_config(trial, spec.space)
        if profiled:
            profile.disable()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        try:
            study.tell(trial, objective(trial))
        except MeasurementFailed:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
    ms, cpu_ms = np.array(times) * 1e3, np.array(cpu) * 1e3
    print(f"{args.spec}: {spec.space.size:,} points, {spec.space.n_feasible:,} feasible; "
          f"sampler set-up {setup:.2f} s; first suggestion {ms[0]:.0f} ms wall "
          f"(learner built, imports)")
    for lo, hi in ((1, 50), (50, 100), (100, 200), (200, 500), (500, 1000)):
        part, part_cpu = ms[lo:hi], cpu_ms[lo:hi]
        if part.size:
            print(f"  trials {lo}-{hi}: wall median {np.median(part):.1f} ms, p95 "
                  f"{np.percentile(part, 95):.1f} ms; CPU median {np.median(part_cpu):.1f} ms, "
                  f"p95 {np.percentile(part_cpu, 95):.1f} ms per suggestion")
    print(f"  load average during the run: {os.getloadavg()[0]:.1f}")
    if args.profile_after is not None:
        n = args.trials - args.profile_after
        print(f"\ncProfile of suggestions {args.profile_after + 1}-{args.trials} "
              f"(cumulative ms per suggestion, profiler overhead included):")
        stats = pstats.Stats(profile)
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][3])  # type: ignore[attr-defined]
        for (path, line, name), (_, _, _, cum, _) in rows[:25]:
            if "aoe_optuna" in path:
                short = path[path.rindex("aoe_optuna"):]
                print(f"  {cum / n * 1e3:7.2f}  {short}:{line}({name})")


if __name__ == "__main__":
    main()
