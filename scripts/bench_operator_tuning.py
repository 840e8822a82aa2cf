"""Operator tuning against its alternatives, on the simulator, equal total budgets.

For each workload (Qwen2.5-7B decode batch 1/16/64, prefill 1k by default) and
seed, side by side in one process:

* ``gradient``: one study per GEMM shape, the gradient scheduler, warm start;
* ``round-robin``: the same with the budget dealt out in turn;
* ``gradient-cold`` / ``round-robin-cold``: the two without warm start;
* ``one-config``: the classic study, one config for every GEMM of the step;
* ``limit``: each shape's exhaustive optimum (noise free), the most per-shape
  tuning can reach.

Every figure is the *true* (noise-free) end-to-end tokens/s of the configs a
run would ship: per shape, its best measured config (after re-timing at the
end of a run); so a lucky noisy measurement earns nothing. One run per
variant goes to the largest budget; smaller budgets are read from its trace
at the last chunk whose measurements plus the re-timing held back for the
contenders fit the budget (the schedulers do not look at the total budget
above 16 measurements per shape), but there the configs are picked by first
timings: only the last budget's figure includes the re-timing.

    .venv/bin/python scripts/bench_operator_tuning.py --seeds 3 --budgets 200,400,800 \\
        --jobs 2 --out /tmp/opbench.json
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import multiprocessing
import platform
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from aoe_optuna.backends.simulator.backend import AscendSimulator
from aoe_optuna.bench.exhaustive import best_per_gemm
from aoe_optuna.operators.scheduler import make_scheduler
from aoe_optuna.operators.shapes import operator_shapes
from aoe_optuna.operators.state import best_measured
from aoe_optuna.operators.tuner import OperatorTuner, Snapshot, TunerOptions
from aoe_optuna.samplers.registry import make_sampler
from aoe_optuna.space.params import default_config
from aoe_optuna.spec.format import read_document
from aoe_optuna.spec.loader import StudySpec, spec_from_dict
from aoe_optuna.study.run.loop import Budget, run_study
from aoe_optuna.study.run.objective import TuningObjective, is_measured

ROOT = Path(__file__).resolve().parents[1]
BASE_SPEC = ROOT / "studies" / "qwen25_7b_decode_catlass_910b2.json"
WORKLOADS = {
    "decode-b1": {"phase": "decode", "batch": 1},
    "decode-b16": {"phase": "decode", "batch": 16},
    "decode-b64": {"phase": "decode", "batch": 64},
    "prefill-1k": {"phase": "prefill", "batch": 1, "seq_len": 1024},
}
VARIANTS = ("gradient", "round-robin", "gradient-cold", "round-robin-cold", "one-config")


def spec_for(workload: str, base: Path) -> StudySpec:
    doc = read_document(base)
    doc = copy.deepcopy(doc)
    doc["workload"] = {**doc.get("workload", {}), **WORKLOADS[workload]}
    doc["max_search_time"] = None
    return spec_from_dict(doc, source=f"{base} [{workload}]")


class TrueLatency:
    """Noise-free latency of a config on a GEMM, cached: what a shipped config really runs at."""

    def __init__(self, spec: StudySpec) -> None:
        opts = {k: v for k, v in spec.backend.items() if k != "name"}
        self.sim = AscendSimulator.from_options({**opts, "noise": 0.0}, spec.profile)
        self.spec = spec
        self.cache: dict[tuple, float] = {}

    def __call__(self, params: dict[str, Any], gemm: Any) -> float:
        key = (tuple(sorted(params.items())), gemm.key)
        if key not in self.cache:
            full = {**default_config(), **self.spec.space.full_config(params)}
            m = self.sim.measure(full, gemm)
            self.cache[key] = m.latency_s if m.ok and m.latency_s else math.inf
        return self.cache[key]


def true_tokens_per_s(spec: StudySpec, truth: TrueLatency,
                      params_of: Callable[[Any], dict[str, Any] | None]) -> float:
    lat = {}
    for g in spec.workload.gemms:
        params = params_of(g)
        if params is None:
            return 0.0
        lat[g.name] = truth(params, g)
    return spec.workload.tokens_per_s(lat)


def limit_tokens_per_s(spec: StudySpec) -> float:
    best = best_per_gemm(spec.space, spec.workload, TrueLatency(spec).sim)
    return spec.workload.tokens_per_s({name: t for name, (t, _) in best.items()})


def run_operator(spec: StudySpec, variant: str, budget: int, seed: int,
                 truth: TrueLatency) -> tuple[list[tuple[int, float]], float]:
    """Trace of (measurements committed, true tokens/s) after each chunk, and the final
    figure. A chunk's point counts the re-timing the run holds back for its contenders:
    what a run of that budget would have spent by then."""
    scheduler = variant.removesuffix("-cold")
    options = TunerOptions(budget=budget, scheduler=make_scheduler(scheduler), seed=seed,
                           warm_start=not variant.endswith("-cold"))
    trace: list[tuple[int, float]] = []

    def on_chunk(tuner: OperatorTuner, snap: Snapshot) -> None:
        best = {s.key: best_measured(ts) for s, ts in zip(tuner.shapes, snap.trials,
                                                           strict=True)}
        trace.append((snap.used + snap.reserve, true_tokens_per_s(
            spec, truth, lambda g: None if best[g.key] is None else dict(best[g.key].params))))

    tuner = OperatorTuner(optuna.storages.InMemoryStorage(), "memory", "bench", spec, options,
                          on_chunk=on_chunk)
    result = tuner.run()
    final = {r.shape.key: r.params for r in result.shapes}
    return trace, true_tokens_per_s(spec, truth, lambda g: final.get(g.key))


def run_one_config(spec: StudySpec, budget: int, seed: int,
                   truth: TrueLatency) -> tuple[list[tuple[int, float]], float]:
    study = optuna.create_study(direction="maximize",
                                sampler=make_sampler("gp-ucb", spec=spec, seed=seed))
    trace: list[tuple[int, float]] = []
    best: dict[str, Any] = {}

    def on_update(progress: Any) -> None:
        if progress.best is not None and progress.measured and (
                not trace or trace[-1][0] != progress.measured):
            best["params"] = dict(progress.best.params)
            trace.append((progress.measured, true_tokens_per_s(
                spec, truth, lambda g: best["params"])))

    run_study(study, TuningObjective.from_spec(spec), Budget(n_measurements=budget), on_update)
    final = max((t for t in study.get_trials(deepcopy=False) if is_measured(t)
                 and t.value is not None), key=lambda t: t.value)
    return trace, true_tokens_per_s(spec, truth, lambda g: dict(final.params))


def one_run(job: tuple[str, int, str, int, str]) -> tuple[Any, ...]:
    """One (workload, seed, variant) run in a worker process."""
    w, seed, v, budget, base = job
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    spec = spec_for(w, Path(base))
    truth = TrueLatency(spec)
    t0 = time.monotonic()
    run = run_one_config if v == "one-config" else (
        lambda *a: run_operator(spec, v, *a[1:]))
    trace, final = run(spec, budget, seed, truth)
    return w, seed, v, trace, final, time.monotonic() - t0


def at_budget(trace: list[tuple[int, float]], budget: int) -> float:
    seen = [v for used, v in trace if used <= budget]
    return seen[-1] if seen else 0.0


def to_reach(trace: list[tuple[int, float]], target: float) -> int | None:
    for used, v in trace:
        if v >= target:
            return used
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help=f"comma-separated, of {', '.join(WORKLOADS)}")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--budgets", default="200,400,800")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--spec", default=str(BASE_SPEC), help="the space, chip and backend")
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel (processes)")
    p.add_argument("--out", default=None, help="write every run's trace here (JSON)")
    args = p.parse_args(argv)
    try:
        budgets = sorted(int(b) for b in args.budgets.split(","))
        workloads = args.workloads.split(",")
        variants = args.variants.split(",")
        bad = [w for w in workloads if w not in WORKLOADS] + [
            v for v in variants if v not in VARIANTS]
        if bad or not budgets or min(budgets) < 1 or args.seeds < 1:
            raise ValueError(f"unknown or bad value {bad or args.budgets}")
    except ValueError as exc:
        print(f"bench_operator_tuning: error: {exc}", file=sys.stderr)
        return 2
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    print(f"# {time.strftime('%Y-%m-%d')}, python {platform.python_version()}, optuna "
          f"{optuna.__version__}, {platform.machine()}; budgets {budgets}, seeds {args.seeds}")
    limits = {}
    for w in workloads:
        t0 = time.monotonic()
        spec = spec_for(w, Path(args.spec))
        limits[w] = limit_tokens_per_s(spec)
        print(f"{w}: {len(operator_shapes(spec.workload))} shapes, per-shape limit "
              f"{limits[w]:.2f} tokens/s ({time.monotonic() - t0:.0f} s)", flush=True)
    jobs = [(w, seed, v, budgets[-1], args.spec) for w in workloads
            for seed in range(args.seeds) for v in variants]
    runs: list[dict[str, Any]] = []
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for w, seed, v, trace, final, wall in pool.imap_unordered(one_run, jobs):
            runs.append({"workload": w, "variant": v, "seed": seed, "limit": limits[w],
                         "trace": trace, "final": final})
            print(f"  {w} seed {seed} {v:<17} {final / limits[w]:.4f} of the limit "
                  f"({wall:.0f} s)", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(runs, indent=1))
    print_table(runs, budgets, workloads, variants)
    return 0


def print_table(runs: list[dict[str, Any]], budgets: list[int], workloads: list[str],
                variants: list[str]) -> None:
    head = " | ".join(f"@{b}" for b in budgets)
    print(f"\n| workload | variant | {head} | to 99% of limit (median) |")
    print("|---|---|" + "---:|" * (len(budgets) + 1))
    for w in workloads:
        for v in variants:
            rs = [r for r in runs if r["workload"] == w and r["variant"] == v]
            if not rs:
                continue
            cells = []
            for b in budgets:
                vals = [(r["final"] if b == budgets[-1] else at_budget(r["trace"], b))
                        / r["limit"] for r in rs]
                cells.append(f"{np.mean(vals):.4f}")
            reach = [to_reach(r["trace"], 0.99 * r["limit"]) for r in rs]
            got = sorted(x for x in reach if x is not None)
            med = f"{int(np.median(got))}" if len(got) * 2 > len(reach) else f">{budgets[-1]}"
            print(f"| {w} | {v} | {' | '.join(cells)} | {med} ({len(got)}/{len(reach)}) |")


if __name__ == "__main__":
    sys.exit(main())
