"""Tuning every operator of the step against tuning its GEMMs only, on the simulator.

For each point (Qwen2.5-7B decode at batch 1 with 1k and 32k context and at
batch 64 with 4k, Qwen2.5-7B prefill of 4k tokens, Qwen3-30B-A3B (MoE, 128
experts, 8 active) decode at batch 1 with 1k context) and budget, side by side:

* ``every operator``: ``attention`` and ``vector_kernels`` "tuned": one study
  per GEMM shape, per decode attention problem and per vector kernel, one
  budget spread by the gradient scheduler;
* ``GEMMs only``: the same budget on the GEMM shapes, attention and the vector
  kernels at CANN's default tilings (the spec's "default");
* ``default kernels``: every operator at its default: the spec's baseline
  (catlass's default GEMM) on every shape, CANN's default tilings elsewhere;
* ``limit``: every operator at its exhaustive optimum (noise free): the most
  per-operator tuning can reach.

Every figure is the true (noise-free) end-to-end tokens/s of the configs a run
would ship (a layer operator's library default where it beats the tuned kernel);
the attention and vector models have no noise. One run per
(point, variant, budget, seed), in memory; the table gives the mean over the
seeds and, in brackets, the fraction of the limit.

    nice .venv/bin/python scripts/bench_layer_ops.py --budgets 200,400 --seeds 3 --jobs 2
"""

from __future__ import annotations

import argparse
import copy
import multiprocessing
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import optuna

from aoe_optuna.aicore.layer_models import LAYER_MODELS
from aoe_optuna.bench.exhaustive import best_per_gemm
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.operators.scheduler import make_scheduler
from aoe_optuna.operators.shapes import step_latencies
from aoe_optuna.operators.tuner import OperatorTuner, TunerOptions
from aoe_optuna.spec.format import read_document
from aoe_optuna.spec.loader import StudySpec, spec_from_dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_operator_tuning import TrueLatency  # noqa: E402  (a sibling script)

ROOT = Path(__file__).resolve().parents[1]
BASE_SPEC = ROOT / "studies" / "qwen25_7b_decode_catlass_910b2.json"
# Each point's workload keys over the catlass decode spec's (Qwen2.5-7B decode).
POINTS: dict[str, dict[str, Any]] = {
    "b1-1k": {"batch": 1, "seq_len": 1024},
    "b1-32k": {"batch": 1, "seq_len": 32768},
    "b64-4k": {"batch": 64, "seq_len": 4096},
    "prefill-4k": {"phase": "prefill", "batch": 1, "seq_len": 4096},
    "moe-b1-1k": {"hf_config": str(ROOT / "studies" / "models" / "qwen3-30b-a3b.json"),
                  "batch": 1, "seq_len": 1024},
}
VARIANTS = ("every operator", "GEMMs only")


def spec_for(point: str, charge: str, base: Path = BASE_SPEC) -> StudySpec:
    """The catlass decode spec at ``point``, attention and vector kernels at ``charge``."""
    doc = copy.deepcopy(read_document(base))
    workload = {**doc.get("workload", {}), **POINTS[point]}
    if "hf_config" in workload:
        workload.pop("model", None)
    doc["workload"] = {**workload, "attention": charge, "vector_kernels": charge}
    doc["max_search_time"] = None
    return spec_from_dict(doc, source=f"{base} [{point}, {charge}]")


def true_tokens_per_s(spec: StudySpec, truth: TrueLatency,
                      gemm_params: dict[Any, dict[str, Any]],
                      layer_latency: dict[str, float]) -> float:
    """The step with each GEMM at its config's noise-free latency and each named layer
    call at the given latency (the rest as the workload charges it)."""
    lat = {g.name: truth(gemm_params[g.key], g) for g in spec.workload.gemms}
    return spec.workload.tokens_per_s({**lat, **layer_latency})


def layer_optimum(spec: StudySpec) -> dict[str, float]:
    """Each layer call at its exhaustive optimum (the model's own search), or at the
    library's default kernel where that is faster (a run then keeps the library's)."""
    out = {}
    for call in spec.workload.layer_ops:  # each problem type's own exhaustive search
        best = LAYER_MODELS[type(call.problem)].best_s(spec.profile, call.problem)
        out[call.name] = min(best, call.charged_s)
    return out


def references(point: str) -> dict[str, float]:
    """default kernels and the per-operator limit of ``point``."""
    spec = spec_for(point, "tuned")
    truth = TrueLatency(spec)
    assert spec.baseline is not None
    base = {g.key: dict(spec.baseline) for g in spec.workload.gemms}
    best = best_per_gemm(spec.space, spec.workload, truth.sim)
    limit_gemms = {g.name: best[g.name][0] for g in spec.workload.gemms}
    return {"default kernels": true_tokens_per_s(spec, truth, base, {}),
            "limit": spec.workload.tokens_per_s({**limit_gemms, **layer_optimum(spec)})}


def one_run(job: tuple[str, str, int, int]) -> tuple[str, str, int, int, float, float]:
    """One (point, variant, budget) run in a worker process: its true tokens/s."""
    point, variant, budget, seed = job
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    spec = spec_for(point, "tuned" if variant == "every operator" else "default")
    t0 = time.monotonic()
    options = TunerOptions(budget=budget, scheduler=make_scheduler("gradient"), seed=seed)
    tuner = OperatorTuner(optuna.storages.InMemoryStorage(), "memory", "bench", spec, options)
    result = tuner.run()
    gemms = {r.shape.key: r.params for r in result.shapes
             if not isinstance(r.shape, LayerOperator)}
    # what the run ships: the tuned kernel, or the library's default where that is faster
    layer = {r.shape.key: r.shipped_s for r in result.shapes
             if isinstance(r.shape, LayerOperator)}
    layer_latency = step_latencies(spec.workload, tuner.layer_ops, layer)
    tps = true_tokens_per_s(spec, TrueLatency(spec), gemms, layer_latency)  # type: ignore[arg-type]
    return point, variant, budget, seed, tps, time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--points", default=",".join(POINTS), help=f"of {', '.join(POINTS)}")
    p.add_argument("--budgets", default="200,400")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 per run")
    p.add_argument("--jobs", type=int, default=2, help="runs in parallel (processes)")
    args = p.parse_args(argv)
    points = args.points.split(",")
    try:
        budgets = sorted(int(b) for b in args.budgets.split(","))
        if [x for x in points if x not in POINTS] or not budgets or min(budgets) < 1 \
                or args.seeds < 1:
            raise ValueError(f"--points of {list(POINTS)}, positive --budgets and --seeds")
    except ValueError as exc:
        print(f"bench_layer_ops: error: expected {exc}", file=sys.stderr)
        return 2
    print(f"# {time.strftime('%Y-%m-%d')}, python {platform.python_version()}, optuna "
          f"{optuna.__version__}; budgets {budgets}, seeds {args.seeds}", flush=True)
    refs = {}
    for point in points:
        refs[point] = references(point)
        print(f"{point}: default kernels {refs[point]['default kernels']:.2f}, per-operator "
              f"limit {refs[point]['limit']:.2f} tokens/s", flush=True)
    jobs = [(pt, v, b, seed) for pt in points for b in budgets for v in VARIANTS
            for seed in range(args.seeds)]
    runs: dict[tuple[str, str, int], list[float]] = {}
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for point, variant, budget, seed, tps, wall in pool.imap_unordered(one_run, jobs):
            runs.setdefault((point, variant, budget), []).append(tps)
            print(f"  {point} {variant:<15} @{budget} seed {seed}: {tps:.2f} tokens/s "
                  f"({wall:.0f} s)", flush=True)
    got = {key: statistics.fmean(values) for key, values in runs.items()}
    head = " | ".join(f"{v} @{b}" for b in budgets for v in VARIANTS)
    print(f"\n| point | default kernels | {head} | limit |")
    print("|---|---:|" + "---:|" * (len(budgets) * len(VARIANTS) + 1))
    for point in points:
        lim = refs[point]["limit"]
        cells = [f"{got[(point, v, b)]:.2f} ({got[(point, v, b)] / lim:.1%})"
                 for b in budgets for v in VARIANTS]
        d = refs[point]["default kernels"]
        print(f"| {point} | {d:.2f} ({d / lim:.1%}) | {' | '.join(cells)} | {lim:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
