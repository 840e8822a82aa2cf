"""The exhaustive optimum of a study, and the sorted distribution of every feasible config.

Benchmarks need the true optimum (for best/opt) and the whole distribution
(for the exact random-sampling baseline of the performance score). Both are
expressed as *cost* = 1 / value: seconds per token for a model workload,
seconds per run for a replayed kernel, so lower is better and ratios read like
the time ratios Kernel Tuner papers quote.

* Replay studies: the recorded times of the configs the space deems feasible;
  recorded failures are kept as ``inf`` (a draw that yields nothing).
* Simulator studies: the simulator's vectorised, noiseless
  ``latency(columns, gemm)`` for every GEMM of the workload, over every
  feasible config, chunk by chunk (11.8M configs fit in a few hundred MB).

Results are cached on disk (``~/.cache/aoe_optuna/exhaustive`` or ``cache_dir``)
under a hash of what defines them, since enumerating a large space takes minutes.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import numpy as np

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.backends.replay.kt_cache import RecordedSpace
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Workload

FORMAT_VERSION = 2  # 2: the catlass-calibrated simulator (other costs than 1)


@dataclass(frozen=True)
class Exhaustive:
    """Every feasible config's cost, sorted ascending (failures as ``inf`` at the end)."""

    costs: np.ndarray
    best_config: dict[str, Any]
    n_unmeasured: int = 0  # feasible configs with no recorded value (replay only)

    @property
    def optimum(self) -> float:
        return float(self.costs[0])

    @property
    def n_feasible(self) -> int:
        return int(self.costs.shape[0])

    @property
    def n_failed(self) -> int:
        return int(np.isinf(self.costs).sum())

    def count_within(self, fraction: float) -> int:
        """Configs whose cost is within ``fraction`` of the optimum (0.01 = 1 %)."""
        return int((self.costs <= self.optimum * (1 + fraction)).sum())


def replay_exhaustive(recorded: RecordedSpace, space: SearchSpace) -> Exhaustive:
    """From the recorded values of the configs ``space`` deems feasible (cost = time in s)."""
    pos = [recorded.keys.index(n) for n in space.names]
    rows = np.array(
        [[p.choices.index(c[i]) for p, i in zip(space.params, pos, strict=True)]
         for c in recorded.configs], dtype=np.int64,
    ).reshape(-1, len(space.names))
    ok = space.is_feasible(rows) if rows.shape[0] else np.zeros(0, dtype=bool)
    costs = np.where(np.isnan(recorded.values), np.inf, recorded.values * 1e-3)[ok]
    if costs.shape[0] == 0 or not np.isfinite(costs).any():
        raise ValueError(f"{recorded.path}: no feasible config with a recorded value")
    order = np.argsort(costs, kind="stable")
    best = rows[ok][order[0]]
    return Exhaustive(costs[order], space.config(best), max(space.n_feasible - int(ok.sum()), 0))


def simulator_exhaustive(space: SearchSpace, workload: Workload, simulator: Any,
                         chunk: int = 500_000) -> Exhaustive:
    """Cost (s per token) of every feasible config, from ``simulator.latency(columns, gemm)``.

    ``latency`` returns seconds per config, NaN where the simulator deems the
    config infeasible (kept as ``inf``).
    """
    parts: list[np.ndarray] = []
    best_cost, best_row = np.inf, None
    for idx in space.iter_feasible(chunk):
        cost = simulator_costs(space, workload, simulator, idx)
        k = int(np.argmin(cost))
        if cost[k] < best_cost:
            best_cost, best_row = float(cost[k]), idx[k].copy()
        parts.append(cost.astype(np.float64))
    if best_row is None:
        raise ValueError("the space has no feasible config with a finite latency")
    costs = np.sort(np.concatenate(parts))
    return Exhaustive(costs, space.config(best_row))


def best_per_gemm(space: SearchSpace, workload: Workload, simulator: Any,
                  chunk: int = 500_000) -> dict[str, tuple[float, dict[str, Any]]]:
    """For each GEMM of ``workload`` (by name): its fastest feasible config and latency (s).

    What a per-operator tuning would pick for that shape alone.
    """
    best: dict[str, tuple[float, np.ndarray]] = {}
    for idx in space.iter_feasible(chunk):
        cols = space.columns(idx)
        for g in workload.gemms:
            lat = np.asarray(simulator.latency(cols, g), dtype=float)
            lat = np.where(np.isnan(lat), np.inf, lat)
            k = int(np.argmin(lat))
            if g.name not in best or lat[k] < best[g.name][0]:
                best[g.name] = (float(lat[k]), idx[k].copy())
    return {name: (t, space.config(row)) for name, (t, row) in best.items()
            if np.isfinite(t)}


def simulator_costs(space: SearchSpace, workload: Workload, simulator: Any,
                    idx: np.ndarray) -> np.ndarray:
    """Noise-free cost (s per token) of index rows ``idx``; ``inf`` where not measurable."""
    cols = space.columns(idx)
    step = np.full(idx.shape[0], workload.fixed_s)
    for g in workload.gemms:
        step = step + g.count * np.asarray(simulator.latency(cols, g), dtype=float)
    return np.where(np.isnan(step), np.inf, step / workload.tokens_per_step)


def cache_key(identity: Any) -> str:
    """A stable hash of anything JSON-serialisable that defines the result."""
    text = json.dumps({"v": FORMAT_VERSION, "id": identity}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def simulator_fingerprint() -> str:
    """A digest of the simulator's code (the AI Core's models and the backend that
    measures with them) and the shipped SoC profiles.

    Part of a simulator study's cache key: a recalibrated model gives other
    costs for the same spec, and a stale cached optimum would be silently wrong.
    """
    from importlib import resources

    digest = hashlib.sha256()
    folders = (resources.files("aoe_optuna.aicore"),
               resources.files("aoe_optuna.backends.simulator"),
               resources.files("aoe_optuna.hardware") / "profiles")
    for folder in folders:
        for name, entry in _model_files(folder):
            digest.update(name.encode() + entry.read_bytes())
    return digest.hexdigest()[:16]


def _model_files(folder: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    """The .py and .json files under ``folder``, subfolders included, by relative path."""
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            yield from _model_files(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith((".py", ".json")):
            yield f"{prefix}{entry.name}", entry


def file_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def default_cache() -> Path:
    """``~/.cache/aoe_optuna/exhaustive``, of the home the process has when it asks."""
    return Path.home() / ".cache" / "aoe_optuna" / "exhaustive"


def load_cached(key: str, cache_dir: Path | None = None) -> Exhaustive | None:
    path = (cache_dir or default_cache()) / f"{key}.npz"
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            return Exhaustive(data["costs"], meta["best_config"], int(meta["n_unmeasured"]))
    except (OSError, ValueError, KeyError):
        return None  # a damaged cache entry is recomputed


def store_cached(key: str, result: Exhaustive, cache_dir: Path | None = None) -> Path:
    folder = cache_dir or default_cache()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.npz"
    meta = json.dumps({"best_config": result.best_config, "n_unmeasured": result.n_unmeasured},
                      default=_plain)
    data = io.BytesIO()
    np.savez_compressed(data, costs=result.costs, meta=np.array(meta))
    write_atomic(path, data.getvalue())  # a temp file per writer: benches may share the cache
    return path


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")
