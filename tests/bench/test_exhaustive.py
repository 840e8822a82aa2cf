"""Exhaustive optimum: replay studies from their records, simulator studies by enumeration."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np
import pytest
from kt_fixture import write_cache

from aoe_optuna.backends.replay.backend import replay_space
from aoe_optuna.backends.replay.kt_cache import read_cache
from aoe_optuna.bench.exhaustive import (
    cache_key,
    load_cached,
    replay_exhaustive,
    simulator_exhaustive,
    store_cached,
)
from aoe_optuna.workload.gemm import Gemm, Workload


def test_replay_exhaustive_sorted_costs_and_failures(tmp_path):
    rec = read_cache(write_cache(tmp_path))
    ex = replay_exhaustive(rec, replay_space(rec))
    np.testing.assert_allclose(ex.costs[:6], [4e-3, 5e-3, 6e-3, 8e-3, 10e-3, 20e-3])
    assert np.isinf(ex.costs[6:]).all() and ex.n_failed == 2 and ex.n_feasible == 8
    assert ex.best_config == {"a": 2, "b": 2, "d": 1}
    assert ex.count_within(0.25) == 2  # 4 and 5 ms
    assert ex.n_unmeasured == 0


class TableLatency:
    """A vectorised latency model with the simulator's interface (NaN = infeasible)."""

    def latency(self, columns, gemm):
        a, b, d = (np.asarray(columns[k], dtype=float) for k in ("a", "b", "d"))
        lat = 1e-3 * (a + 2 * b) * (1.5 if gemm.name == "up" else 1.0) - 1e-4 * d
        return np.where((a == 3) & (d == 1), np.nan, lat)


def test_simulator_exhaustive_matches_a_loop(tmp_path):
    space = replay_space(read_cache(write_cache(tmp_path)), recorded_only=False)
    workload = Workload("w", (Gemm(1, 1, 1, name="down", count=2), Gemm(1, 1, 1, name="up")),
                        tokens_per_step=4, fixed_s=2e-3)
    ex = simulator_exhaustive(space, workload, TableLatency(), chunk=5)
    expected = []
    for a in (1, 2, 3):
        for b in (1, 2):
            for d in (0, 1):
                if a == 3 and d == 1:
                    expected.append(np.inf)
                    continue
                base = 1e-3 * (a + 2 * b) - 1e-4 * d
                expected.append((2e-3 + 2 * base + (1e-3 * (a + 2 * b) * 1.5 - 1e-4 * d)) / 4)
    np.testing.assert_allclose(ex.costs, np.sort(expected))
    assert ex.best_config == {"a": 1, "b": 1, "d": 1}


def test_disk_cache_round_trip(tmp_path):
    rec = read_cache(write_cache(tmp_path))
    ex = replay_exhaustive(rec, replay_space(rec))
    key = cache_key({"spec": {"x": 1}})
    assert key != cache_key({"spec": {"x": 2}})
    assert load_cached(key, tmp_path / "c") is None
    store_cached(key, ex, tmp_path / "c")
    back = load_cached(key, tmp_path / "c")
    assert back is not None and back.best_config == ex.best_config
    np.testing.assert_array_equal(back.costs, ex.costs)
    (tmp_path / "c" / f"{key}.npz").write_bytes(b"damaged")
    assert load_cached(key, tmp_path / "c") is None


def test_no_feasible_value_is_an_error(tmp_path):
    path = write_cache(tmp_path)
    text = path.read_text()
    for t in ("10.0", "8.0", "5.0", "4.0", "6.0", "20.0"):
        text = text.replace(f'"time": {t}', '"time": "RuntimeFailedConfig"')
    path.write_text(text)
    rec = read_cache(path)
    with pytest.raises(ValueError, match="no feasible config"):
        replay_exhaustive(rec, replay_space(rec))


def test_simulator_cache_key_follows_the_model_code() -> None:
    from aoe_optuna.bench.exhaustive import cache_key, simulator_fingerprint

    first = simulator_fingerprint()
    assert first == simulator_fingerprint() and len(first) == 16
    spec = {"spec": {"op_name": "x"}}
    assert cache_key({**spec, "model": first}) != cache_key({**spec, "model": "0" * 16})


def _store_many(key: str, folder: str, costs: list[float], times: int, go) -> None:
    from aoe_optuna.bench.exhaustive import Exhaustive

    ex = Exhaustive(np.asarray(costs), {"a": 1}, 0)
    go.wait(60)  # all writers start together
    for _ in range(times):
        store_cached(key, ex, Path(folder))


def test_benches_sharing_a_cache_store_the_same_entry_together(tmp_path):
    """Two processes writing one entry at once: each through its own temporary file."""
    key = cache_key({"spec": {"x": 3}})
    costs = list(np.linspace(1e-3, 2e-3, 20_000))
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs = [ctx.Process(target=_store_many, args=(key, str(tmp_path), costs, 40, go))
             for _ in range(3)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    back = load_cached(key, tmp_path)
    assert back is not None and back.best_config == {"a": 1}
    assert sorted(f.name for f in tmp_path.iterdir()) == [f"{key}.npz"]
