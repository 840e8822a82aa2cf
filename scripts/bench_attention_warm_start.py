"""Warm start of attention studies, paired: the same run with and without it.

Qwen2.5-7B decode at batch 1 served at two contexts (1k and 32k) with attention
tuned: five GEMM shapes and two decode attention problems with the same heads.
For each seed, two operator runs with equal budgets, one process, the same
sampler seed: ``warm`` seeds each attention study from the attention winners of
the run and of the knowledge base (none here: the run's own), ``cold`` gives
seeds to the GEMM shapes only (what the tuner did before attention took seeds).
GEMM shapes are warm-started in both.

Figures are noise free: each attention winner's latency in the simulator's
model (exact) against its exhaustive best, and the end-to-end tokens/s of every
winner with the GEMMs timed without noise.

    .venv/bin/python scripts/bench_attention_warm_start.py --seeds 0,1,2 --budgets 160,320
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import optuna

from aoe_optuna.operators import tuner as tuner_module
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.operators.scheduler import make_scheduler
from aoe_optuna.operators.shapes import OperatorShape, step_latencies
from aoe_optuna.operators.tuner import OperatorTuner, TunerOptions
from aoe_optuna.operators.warm_start import warm_point
from aoe_optuna.spec.format import read_document
from aoe_optuna.spec.loader import StudySpec, spec_from_dict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from bench_operator_tuning import TrueLatency  # noqa: E402

BASE_SPEC = ROOT / "studies" / "qwen25_7b_decode_catlass_910b2.json"
WORKLOAD = {"phase": "decode", "batch": 1, "seq_len": [1024, 32768], "attention": "tuned"}


def spec() -> StudySpec:
    doc = copy.deepcopy(read_document(BASE_SPEC))
    doc["workload"] = {**doc.get("workload", {}), **WORKLOAD}
    doc["max_search_time"] = None
    return spec_from_dict(doc, source=f"{BASE_SPEC} [decode b1 s1k,32k attention tuned]")


def gemm_seeds_only(op: Any) -> Any:
    return warm_point(op) if isinstance(op, OperatorShape) else None


def best_latency(op: LayerOperator, s: StudySpec) -> float:
    space, model = op.space(s.profile), op.model(s.profile)
    return min(model(c) for c in space.configs(space.all_feasible()))


def run(s: StudySpec, truth: TrueLatency, budget: int, seed: int, warm: bool) -> dict[str, Any]:
    tuner_module.warm_point = warm_point if warm else gemm_seeds_only
    try:
        options = TunerOptions(budget=budget, scheduler=make_scheduler("gradient"), seed=seed)
        tuner = OperatorTuner(optuna.storages.InMemoryStorage(), "memory", "bench", s, options)
        result = tuner.run()
    finally:
        tuner_module.warm_point = warm_point
    latency: dict[Any, float] = {}
    attention = {}
    for r in result.shapes:
        if isinstance(r.shape, OperatorShape):
            latency[r.shape.key] = (truth(r.params, r.shape.gemm) if r.params is not None
                                    else math.inf)
        else:
            latency[r.shape.key] = r.latency_s  # the model is exact
            attention[r.shape.dims] = {"latency_us": r.latency_s * 1e6,
                                       "measured": r.measured}
    seeded = {u.study.study_name.rsplit("/", 1)[-1]: sum(
        1 for t in u.study.get_trials() if "warm_start" in t.user_attrs)
        for u, op in zip(tuner.units, tuner.shapes, strict=True)
        if isinstance(op, LayerOperator)}
    tps = s.workload.tokens_per_s(step_latencies(s.workload, tuner.shapes, latency))
    return {"tokens_per_s": tps, "attention": attention, "seeds": seeded, "used": result.used}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--budgets", default="160,320")
    p.add_argument("--out", default=None, help="JSON of every run")
    args = p.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    s = spec()
    truth = TrueLatency(s)
    best = {op.dims: best_latency(op, s) * 1e6
            for op in OperatorTuner(optuna.storages.InMemoryStorage(), "memory", "best", s,
                                    TunerOptions(budget=1, scheduler=make_scheduler("gradient"))
                                    ).layer_ops}
    print("exhaustive best attention: " + ", ".join(f"{k} {v:.3f} us" for k, v in best.items()))
    rows = []
    for budget in (int(b) for b in args.budgets.split(",")):
        for seed in (int(x) for x in args.seeds.split(",")):
            pair = {arm: run(s, truth, budget, seed, arm == "warm") for arm in ("warm", "cold")}
            rows.append({"budget": budget, "seed": seed, **pair})
            for arm, r in pair.items():
                gaps = " ".join(f"{k} +{(v['latency_us'] / best[k] - 1) * 100:.2f}% "
                                f"({v['measured']} meas, {r['seeds'].get(k, 0)} seeds)"
                                for k, v in r["attention"].items())
                print(f"budget {budget} seed {seed} {arm:<4} {r['tokens_per_s']:.3f} tokens/s"
                      f"  attention over best: {gaps}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"best_us": best, "runs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
