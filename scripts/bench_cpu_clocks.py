"""The cpu backend's two clocks on this host as it is: how much a config's timing moves.

    python scripts/bench_cpu_clocks.py [--spec studies/cpu_gemm.json]
        [--report /tmp/certified_cpu/report.json] [--rounds 6]

Times the spec's baseline and the certified winners of a ``bench_certified_cpu.py``
report (its ``report.json``) in interleaved rounds, each config in each round once
on the wall clock and once on the timing thread's CPU clock (two backends of the
spec, ``backend.clock`` wall and thread_cpu, sharing one build cache), and prints
per config: the median over rounds of each clock, the spread of its log from round
to round (what one measurement of it is worth on this host now), and each median
over the fastest config's. On a quiet host the two clocks agree; on a loaded one the
wall clock also counts the time the kernel waited for a core.
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
from aoe_optuna.spec.loader import load_spec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="studies/cpu_gemm.json")
    ap.add_argument("--report", type=Path, default=Path("/tmp/certified_cpu/report.json"))
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    spec = load_spec(args.spec)
    gemm = spec.workload.gemms[0]
    runs = json.loads(args.report.read_text())["runs"]
    configs = {"baseline": spec.baseline or {},
               **{f"winner of run {r['seed']}": r["winner"] for r in runs}}
    options = {k: v for k, v in backend_options(spec.backend).items() if k != "clock"}
    times: dict[str, dict[str, list[float]]] = {n: {"wall": [], "thread_cpu": []}
                                                for n in configs}
    with tempfile.TemporaryDirectory(prefix="aoe-clocks-") as cache, \
            CpuBackend(**{**options, "work_dir": cache, "clock": "wall"}) as wall, \
            CpuBackend(**{**options, "work_dir": cache, "clock": "thread_cpu"}) as cpu:
        names = list(configs)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                full = spec.space.full_config(configs[name])
                for clock, backend in (("wall", wall), ("thread_cpu", cpu)):
                    m = backend.measure(full, gemm)
                    if not m.ok:
                        raise SystemExit(f"{name}: {m.reason}")
                    times[name][clock].append(m.latency_s)
            print(f"round {r + 1} of {args.rounds}: load average {os.getloadavg()[0]:.1f}",
                  flush=True)
    best = {c: min(np.median(t[c]) for t in times.values()) for c in ("wall", "thread_cpu")}
    print("| config | wall ms, median | round-to-round sd of log | over the fastest | "
          "thread CPU ms, median | round-to-round sd of log | over the fastest |")
    print("|---|---|---|---|---|---|---|")
    for name, t in times.items():
        cells = []
        for c in ("wall", "thread_cpu"):
            med = float(np.median(t[c]))
            cells += [f"{med * 1e3:.2f}", f"{float(np.std(np.log(t[c]), ddof=1)):.3f}",
                      f"{med / best[c]:.2f}x"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
