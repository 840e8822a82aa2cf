"""A kernel-set run on the cpu backend, timed for real on M it never measured.

For a stored run (``aoe-tune kernel-set``), per operator: one M from each of
``--strata`` slices of equal weight of the mix's M that are not tuning shapes
(``bench_kernel_set.held_out``), each weighted by its slice. At each such M this
times, with the run's backend (real builds, cached, and timings): the kernel the
set of K = 1..``--k-max`` dispatches it to; the measured config the run's model
predicts fastest at that M (the **reference**: the best a per-M choice among the
configs measured could ship); and the best measured config of the nearest tuning
shape in log M (**nearest**: the knowledge base's rule over the same 16 tuned
shapes). The figures are each weighted sum over the reference's.

    .venv/bin/aoe-tune kernel-set --config studies/cpu_gemm_kernel_set.json \\
        --n-trials 60 --k 4 --storage sqlite:///cpu_ks.db --study-name cpu-ks
    .venv/bin/python scripts/bench_kernel_set_cpu.py sqlite:///cpu_ks.db cpu-ks
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import optuna
from bench_kernel_set import held_out

from aoe_optuna.kernel_set import outcome
from aoe_optuna.kernel_set.run import open_run
from aoe_optuna.kernel_set.selection import dispatch
from aoe_optuna.kernel_set.tuner import open_units
from aoe_optuna.spec.backend import make_backend


def _weighted(backend: Any, space: Any, op: Any, ms: np.ndarray, ws: np.ndarray
              ) -> Callable[[list[dict[str, Any]]], float]:
    """The weighted real latency of serving ``ms`` by the configs given (one per M); each
    (config, M) timed once."""
    timed: dict[tuple[str, int], float] = {}

    def time_at(config: dict[str, Any], m: int) -> float:
        key = (repr(sorted(config.items())), m)
        if key not in timed:
            got = backend.measure(space.full_config(config), op.gemm(m))
            timed[key] = float(got.latency_s) if got.ok else float("inf")
        return timed[key]

    return lambda configs: float(sum(w * time_at(c, int(m))
                                     for c, m, w in zip(configs, ms, ws, strict=True)))


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("storage")
    p.add_argument("study_name")
    p.add_argument("--strata", type=int, default=12)
    p.add_argument("--k-max", type=int, default=4)
    args = p.parse_args(argv)
    run = open_run(args.storage, None, args.study_name, None)
    units = open_units(run.storage, run.name, run.spec, run.plan.operators, run.plan.tuned)
    backend = make_backend(run.spec)
    for r, unit in zip(outcome.outcomes(units), units, strict=True):
        op, space = r.op, unit.space
        held = held_out(op, unit.tuned, args.strata)
        ms = np.array([m for m, _ in held])
        ws = np.array([w for _, w in held])
        weighted = _weighted(backend, space, op, ms, ws)
        at = np.searchsorted(op.m, ms)
        reference = weighted([r.configs[int(i)] for i in r.latency_s[:, at].argmin(axis=0)])
        got = unit.study.measured
        best_at: dict[int, tuple[float, np.ndarray]] = {}
        for row, m, lat in zip(got.rows, got.ms, got.latency_s, strict=True):
            if m not in best_at or lat < best_at[m][0]:
                best_at[m] = (lat, row)
        tuned = np.array(sorted(best_at))
        near = tuned[np.abs(np.log2(tuned)[None, :] - np.log2(ms)[:, None]).argmin(axis=1)]
        nearest = weighted([space.config(best_at[int(t)][1]) for t in near])
        print(f"{op.label}: {len(ms)} held-out M ({', '.join(map(str, ms.tolist()))}), "
              f"reference {reference * 1e3:.3f} ms weighted; nearest tuned shape "
              f"({len(tuned)} shapes): {nearest / reference:.4f}")
        print("| K | kernels | held-out / reference |")
        print("|---|---:|---:|")
        for k in range(1, args.k_max + 1):
            choice = r.best_for(k)
            rows = dispatch(choice.ranges, ms)
            value = weighted([r.configs[int(i)] for i in rows])
            print(f"| {k} | {len(choice.rows)} | {value / reference:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
