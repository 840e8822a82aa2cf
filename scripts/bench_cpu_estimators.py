"""The cpu backend's two estimators on this host as it is: how much one measurement moves.

    python scripts/bench_cpu_estimators.py [--spec studies/cpu_gemm.json]
        [--report /tmp/certified_cpu/report.json] [--rounds 10] [--window 0.5]

Times the spec's baseline and the certified winners of a ``bench_certified_cpu.py``
report in interleaved rounds, one measurement of each config a round, each a full
window of calls (``--window`` seconds, at most 1,000 calls). From the same calls it
reads both estimators, so they are compared paired: the **median** as the median
policy reports it (the median of the calls up to the first point where it is known
to the spec's ``rel_precision``, at least ``min_repeats`` calls: what a timing with
``backend.estimator`` ``median`` stops at), and the **minimum** over the whole window
(``min``, the default). Per config it prints each estimator's median over the rounds
and the spread of its log from round to round: what one measurement is worth here.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from aoe_optuna.backends.cpu.backend import CpuBackend
from aoe_optuna.backends.registry import backend_options
from aoe_optuna.backends.timing import median_precision
from aoe_optuna.spec.loader import load_spec


def median_policy(samples: np.ndarray, min_repeats: int, rel_precision: float) -> float:
    """What a median timing of these calls would have reported: it stops at the first
    prefix of at least ``min_repeats`` calls whose median is known to ``rel_precision``."""
    for n in range(min_repeats, len(samples) + 1):
        if median_precision(samples[:n]) <= rel_precision:
            return float(np.median(samples[:n]))
    return float(np.median(samples))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="studies/cpu_gemm.json")
    ap.add_argument("--report", type=Path, default=Path("/tmp/certified_cpu/report.json"))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--window", type=float, default=0.5, help="seconds of calls a measurement")
    args = ap.parse_args()
    spec = load_spec(args.spec)
    gemm = spec.workload.gemms[0]
    runs = json.loads(args.report.read_text())["runs"]
    configs = {"baseline": spec.baseline or {},
               **{f"winner of run {r['seed']}": r["winner"] for r in runs}}
    options = backend_options(spec.backend)
    min_repeats = int(options.get("min_repeats", 3))
    rel_precision = float(options.get("rel_precision", 0.02))
    got: dict[str, dict[str, list[float]]] = {n: {"median": [], "min": []} for n in configs}
    window = {**options, "estimator": "min", "max_seconds": args.window, "max_repeats": 1000}
    with tempfile.TemporaryDirectory(prefix="aoe-estimators-") as cache, \
            CpuBackend(**{**window, "work_dir": cache}) as backend:
        names = list(configs)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                m = backend.measure(spec.space.full_config(configs[name]), gemm)
                if not m.ok:
                    raise SystemExit(f"{name}: {m.reason}")
                calls = np.asarray(m.samples_s)
                got[name]["median"].append(median_policy(calls, min_repeats, rel_precision))
                got[name]["min"].append(float(calls.min()))
            print(f"round {r + 1} of {args.rounds}: load average {os.getloadavg()[0]:.1f}",
                  flush=True)
    print("| config | median policy: ms, median over rounds | round-to-round sd of log "
          "| minimum of the window: ms | round-to-round sd of log |")
    print("|---|---|---|---|---|")
    for name, est in got.items():
        med, low = np.asarray(est["median"]), np.asarray(est["min"])
        print(f"| {name} | {np.median(med) * 1e3:.2f} | {np.std(np.log(med)):.3f} "
              f"| {np.median(low) * 1e3:.2f} | {np.std(np.log(low)):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
