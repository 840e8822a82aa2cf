"""Kernel Tuner's own strategies on the same recorded file, for the side-by-side table.

Kernel Tuner (``pip install kernel-tuner``, a bench-only extra; no GPU needed)
replays a cache file in its simulation mode (``tune_cache``). Its
restrictions there are "only the configs present in the file", the same
known constraint our replay space uses by default, and its search space holds
only valid configs, so it never proposes an infeasible one. A config it
revisits is served from its cache and not charged; we count a run's
measurements as its distinct configs in the order it first evaluated them.

Each run works on its own decompressed copy (Kernel Tuner appends to the
cache file it is given).
"""

from __future__ import annotations

import gzip
import importlib.util
import random
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from aoe_optuna.bench.seed_run import Case, RunResult

STRATEGIES = ("bayes_opt", "genetic_algorithm", "random_sample")
PREFIX = "kt:"


def available() -> bool:
    """Whether kernel_tuner is installed (without importing it: it pulls in pandas)."""
    return importlib.util.find_spec("kernel_tuner") is not None


def _plain_copy(src: Path, folder: Path) -> Path:
    dst = folder / "cache.json"
    opener = gzip.open if src.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(src, "rb") as fin, dst.open("wb") as fout:
        shutil.copyfileobj(fin, fout)
    return dst


def run_kernel_tuner(case: Case, strategy: str, seed: int, budget: int) -> RunResult:
    """One Kernel Tuner strategy run with ``max_fevals = budget`` in simulation mode."""
    from kernel_tuner.interface import tune_cache

    result = RunResult(case=case.name, sampler=PREFIX + strategy, seed=seed, budget=budget)
    with tempfile.TemporaryDirectory(prefix="aoe_kt_") as tmp:
        path = _plain_copy(Path(case.path), Path(tmp))
        random.seed(seed)
        np.random.seed(seed)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows, _env = tune_cache(str(path), strategy=strategy,
                                    strategy_options={"max_fevals": budget},
                                    verbose=False, quiet=True)
        result.wall_s = time.perf_counter() - start
    keys = [k for k in rows[0] if k not in _RESULT_FIELDS] if rows else []
    seen: set[tuple] = set()
    for row in rows:
        key = tuple(row[k] for k in keys)
        if key in seen:
            continue
        seen.add(key)
        t = row.get("time")
        result.costs.append(float(t) * 1e-3 if isinstance(t, (int, float)) else float("nan"))
        result.sampler_s.append(float(row.get("strategy_time", 0.0)) * 1e-3)
        if len(result.costs) == budget:
            break
    if len(result.costs) < budget:
        result.stopped = "exhausted"
    return result


_RESULT_FIELDS = {
    "time", "times", "compile_time", "verification_time", "benchmark_time", "GFLOP/s", "GB/s",
    "strategy_time", "framework_time", "timestamp",
}


def run_kt_task(args: tuple[Case, str, int, int]) -> RunResult:
    return run_kernel_tuner(*args)
