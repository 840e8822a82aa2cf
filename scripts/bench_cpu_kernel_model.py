"""How well the cpu kernel's model orders configs it was not written from.

    python scripts/bench_cpu_kernel_model.py [--spec studies/cpu_gemm.json]
        [--shape 64,2048,256] [--configs 40] [--top 4] [--window 1.0] [--seed 1]
        [--storage sqlite:///run0.db ...]

Times ``--configs`` configs drawn uniformly from the spec's space, and the ``--top``
configs the model ranks fastest among 4,096 drawn the same way, on a GEMM of shape
``M,K,N`` (each timing the fastest call of a ``--window`` window); prints the rank
correlation (Spearman) of the model's predictions with the timings of the random
draws, and each top config's time over the fastest timed. ``--storage`` adds the
completed trials of the studies in those storages (the spec's own shape) as a second
set to correlate (``--configs 0``: those alone, nothing timed). Configs that fail
(int8's accuracy, a build) are counted and left out.
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np
import optuna
from scipy.stats import spearmanr

from aoe_optuna.backends.cpu.backend import CpuBackend
from aoe_optuna.backends.cpu.kernel_model import kernel_model
from aoe_optuna.backends.registry import backend_options
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.workload.gemm import Gemm


def stored_trials(urls: list[str]) -> tuple[list[dict], np.ndarray]:
    """Every completed trial's params and value in the studies of ``urls``."""
    params, values = [], []
    for url in urls:
        for summary in optuna.get_all_study_summaries(url):
            study = optuna.load_study(study_name=summary.study_name, storage=url)
            for t in study.get_trials(deepcopy=False, states=[optuna.trial.TrialState.COMPLETE]):
                params.append(t.params)
                values.append(t.value)
    return params, np.asarray(values, dtype=float)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="studies/cpu_gemm.json")
    ap.add_argument("--shape", default="64,2048,256", help="M,K,N of the GEMM timed")
    ap.add_argument("--configs", type=int, default=40)
    ap.add_argument("--top", type=int, default=4)
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--storage", action="append", default=[])
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec = load_spec(args.spec)
    space, model = spec.space, kernel_model()
    print(model.describe())
    if args.storage:
        params, values = stored_trials(args.storage)
        idx = np.array([space.index(p) for p in params])
        pred = model.latency(space.columns(idx), spec.workload.gemms[0])
        rho = spearmanr(-pred, values).statistic
        print(f"{len(values)} stored trials (the spec's shape): Spearman {rho:.3f}")
    if args.configs == 0:
        return 0
    m, k, n = (int(x) for x in args.shape.split(","))
    gemm = Gemm(M=m, K=k, N=n, dtype=spec.workload.gemms[0].dtype)
    rng = np.random.default_rng(args.seed)
    drawn = space.sample_feasible(args.configs, rng)
    pool = space.sample_feasible(4096, rng)
    pool_pred = model.latency(space.columns(pool), gemm)
    top = pool[np.argsort(pool_pred)[:args.top]]
    rows = np.concatenate([drawn, top])
    predicted = model.latency(space.columns(rows), gemm)
    options = {**backend_options(spec.backend), "estimator": "min",
               "max_seconds": args.window, "max_repeats": 1000}
    timed = np.full(rows.shape[0], np.nan)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="aoe-model-") as cache, \
            CpuBackend(**{**options, "work_dir": cache}) as backend:
        for i, row in enumerate(rows):
            got = backend.measure(space.full_config(space.config(row)), gemm)
            if got.ok:
                timed[i] = got.latency_s
            else:
                failed += 1
            print(f"{i + 1}/{rows.shape[0]} timed", flush=True)
    ok = np.isfinite(timed[:len(drawn)])
    rho = spearmanr(predicted[:len(drawn)][ok], timed[:len(drawn)][ok]).statistic
    print(f"GEMM {m}x{k}x{n}: {ok.sum()} random configs timed ({failed} failed in all); "
          f"Spearman of the model with the timings: {rho:.3f}")
    fastest = np.nanmin(timed)
    for i in range(len(drawn), rows.shape[0]):
        print(f"model's top {i - len(drawn) + 1}: {timed[i] / fastest:.3f}x the fastest timed "
              f"({space.config(rows[i])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
