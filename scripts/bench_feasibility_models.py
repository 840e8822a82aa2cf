"""GPUCBSampler's two P(success) models, offline, on a recorded space run as a plain study.

The plain study's space is the product of the recorded tunables' values; a
config fails when it is not in the recording (docs/benchmarks/recorded_spaces.md, "Plain
Optuna studies"). Each model is fitted to the outcomes of ``n`` configs drawn
uniformly from the product and scored on 10,000 others: AUC (how well it
ranks configs that run above configs that fail), log loss (calibration), and
the share of the configs that run which it rates above 0.5 (what the chance
constraint keeps). Fit times: with one BLAS thread (as the sampler fits), and
with BLAS's own threads (the halfspaces' L-BFGS; the vote does not use it).

    .venv/bin/python scripts/bench_feasibility_models.py gemm_RTX_2080_Ti --outcomes 200,400
"""

from __future__ import annotations

import argparse
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from optuna.distributions import CategoricalDistribution

from aoe_optuna.backends.replay.kt_cache import read_cache
from aoe_optuna.samplers.gp_ucb import _feasibility_halfspaces as halfspaces
from aoe_optuna.samplers.gp_ucb._feasibility import FeasibilityModel
from aoe_optuna.samplers.gp_ucb._feasibility_halfspaces import HalfspaceFeasibility
from aoe_optuna.samplers.plain_space import param_of
from aoe_optuna.space.search_space import SearchSpace

SPACES = Path(__file__).resolve().parents[1].parent / "shared" / "spaces"
TEST = 10_000


def auc(p: np.ndarray, ok: np.ndarray) -> float:
    """P(a config that runs is rated above one that fails), ties counted half."""
    ranks = np.empty(p.size)
    order = np.argsort(p, kind="stable")
    ranks[order] = np.arange(1, p.size + 1)
    for value in np.unique(p):  # average ranks of ties
        tied = p == value
        ranks[tied] = ranks[tied].mean()
    n_ok, n_fail = ok.sum(), (~ok).sum()
    return float((ranks[ok].sum() - n_ok * (n_ok + 1) / 2) / (n_ok * n_fail))


def log_loss(p: np.ndarray, ok: np.ndarray) -> float:
    p = np.clip(p, 1e-4, 1 - 1e-4)
    return float(-np.mean(np.where(ok, np.log(p), np.log1p(-p))))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("space", help="recorded space name in ../shared/spaces")
    ap.add_argument("--outcomes", default="200,400", help="training sizes, comma-separated")
    ap.add_argument("--repeats", type=int, default=3, help="training draws per size")
    args = ap.parse_args(argv)
    recorded = read_cache(SPACES / f"{args.space}.json.gz")
    valid = {c for c, v in zip(recorded.configs, recorded.values, strict=True)
             if np.isfinite(v)}
    space = SearchSpace([param_of(n, CategoricalDistribution(list(recorded.tune_params[n])), 2)
                         for n in recorded.varying])
    rows = space.all_feasible()
    ok = np.array([tuple({**recorded.fixed, **space.config(r)}[k] for k in recorded.keys)
                   in valid for r in rows])
    x = space.encode(rows)
    print(f"{args.space}: {rows.shape[0]:,} configs in the product, {ok.mean():.0%} recorded")
    print("| outcomes | model | AUC | log loss | runs rated > 0.5 | fit ms, 1 BLAS thread "
          "| fit ms, BLAS default |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    test = rng.choice(rows.shape[0], TEST, replace=False)
    for n in (int(s) for s in args.outcomes.split(",")):
        scores: dict[str, list[tuple[float, float, float, float, float]]] = {}
        for rep in range(args.repeats):
            train = rng.choice(rows.shape[0], n, replace=False)
            x_ok, x_failed = x[train][ok[train]], x[train][~ok[train]]
            fits = {
                "vote": lambda a=x_ok, b=x_failed: FeasibilityModel.fit(a, b),
                "halfspaces": lambda a=x_ok, b=x_failed, r=rep: HalfspaceFeasibility.fit(
                    a, b, np.random.default_rng(r)),
            }
            for name, fit in fits.items():
                start = time.perf_counter()
                model = fit()
                one_thread_ms = (time.perf_counter() - start) * 1e3
                limit, halfspaces.one_blas_thread = halfspaces.one_blas_thread, nullcontext
                start = time.perf_counter()
                fit()
                default_ms = (time.perf_counter() - start) * 1e3
                halfspaces.one_blas_thread = limit
                assert model is not None
                p = model.predict(x[test])
                truth = ok[test]
                scores.setdefault(name, []).append((
                    auc(p, truth), log_loss(p, truth), float(np.mean(p[truth] > 0.5)),
                    one_thread_ms, default_ms))
        for name, rows_ in scores.items():
            m = np.mean(rows_, axis=0)
            print(f"| {n} | {name} | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.2f} | {m[3]:.0f} "
                  f"| {m[4]:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
