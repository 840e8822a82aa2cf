"""A kill at every write of a trial's life, on every storage, then resume: nothing lost.

The way SQLite tests itself: ``aoe-tune`` (a process of its own, forked with its modules
loaded, :mod:`tests.support.preloaded`; real storage) sends itself SIGKILL at one named
fault point (aoe_optuna/study/trials/fault_points.py);
the same command is run again, killed at the next point, and so on; a last
run finishes the study. Then the study must hold exactly the requested
measurements, no config measured twice, no trial left RUNNING, and every
result that reached storage before a kill kept (or its config measured
again).
"""

from __future__ import annotations

import os
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.study.run.objective import count_measured, is_measured
from aoe_optuna.study.storage.opening import open_storage
from aoe_optuna.study.trials.recovery import MAX_RETRY, holds_result
from tests.support.pg_server import postgres_server, server_bin
from tests.support.preloaded import aoe_tune_forked

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "studies" / "qwen25_7b_decode_910b2.json"  # simulator: measurements are instant
N_MEASUREMENTS = 40  # more than the killed runs measure, so each run is killed
N_PARAMS = 6  # tile_m, tile_k, tile_n, pipeline, l1_prefetch, output_align
N_RESULT_ATTRS = 8  # cost_s, build_s, tokens_per_s, latency_us, tflops, roofline_fraction,
#                    sampler_s, measured (the simulator's result, in write order)

# Every write point of a trial's life, in order, as (name, AOE_FAULT_AT). Each run
# first finishes the trial the previous kill left (its retry is popped first), so
# the kill lands on the run's second trial: the arrival counts skip the first
# trial's arrivals, and no config is killed twice.
POINTS = [
    ("creation", "born:2"),
    ("ask", "ask:2"),
    *[(f"param {i}", f"param:{N_PARAMS + i}") for i in range(1, N_PARAMS + 1)],
    ("constraints", "constraints:2"),
    ("measure", "measure:2"),
    *[(f"result attribute {i}", f"result:{N_RESULT_ATTRS + i}")
      for i in range(1, N_RESULT_ATTRS + 1)],
    ("before tell", "tell:2"),
    ("after tell", "told:2"),
]
# Where storages differ is how a write lands, not which write it is: every point runs on
# SQLite, and on the Journal file and PostgreSQL the first and last write of each phase
# (a kill between two parameters or two result attributes of one phase is SQLite's).
BOUNDARY_POINTS = [(name, fault) for name, fault in POINTS
                   if not name.startswith(("param ", "result attribute "))
                   or name.endswith((" 1", f" {N_PARAMS}", f" {N_RESULT_ATTRS}"))]

pytestmark = pytest.mark.slow  # ~40 runs of aoe-tune: about a minute


def _tune(url: str, fault: str | None, seed: int) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AOE_FAULT")}
    if fault is not None:
        env["AOE_FAULT_AT"] = fault
    return aoe_tune_forked(
        ["--config", str(SPEC), "--storage", url, "--study-name", "fm",
         "--n-trials", str(N_MEASUREMENTS), "--sampler", "random", "--seed", str(seed),
         "--no-progress"], Path.cwd(), env, timeout=120)


def _trials(url: str) -> list[FrozenTrial]:
    storage = open_storage(url)
    try:
        return optuna.load_study(study_name="fm", storage=storage).get_trials()
    finally:
        engine = getattr(storage, "engine", None)
        if engine is not None:  # no connection of this process outlives the read
            engine.dispose()


def _run_matrix(url: str, points: list[tuple[str, str]] = POINTS) -> dict[str, object]:
    """Kill at each point in turn, then finish; returns what the checks need."""
    kept: dict[int, float | None] = {}  # trials whose whole result was stored at a kill
    partial: dict[int, dict] = {}  # trials killed with part of a result: configs to re-measure
    killed: dict[str, tuple[int | None, str]] = {}  # point -> (trial, what it held)
    for seed, (point, fault) in enumerate(points):
        proc = _tune(url, fault, seed)
        assert proc.returncode == -signal.SIGKILL, f"{point}: {proc.returncode} {proc.stderr}"
        killed[point] = (None, "no trial RUNNING")
        for t in _trials(url):
            if t.state != TrialState.RUNNING:
                continue
            if holds_result(t):
                kept[t.number] = t.user_attrs.get("tokens_per_s")
                killed[point] = (t.number, "whole result")
            elif "cost_s" in t.user_attrs:
                partial[t.number] = t.params
                killed[point] = (t.number, "part of a result")
            elif 0 < len(t.params) < N_PARAMS:
                killed[point] = (t.number, f"{len(t.params)} of {N_PARAMS} params")
            else:
                killed[point] = (t.number, "params only" if t.params else "no params yet")
    final = _tune(url, None, 999)
    assert final.returncode == 0, final.stderr
    return {"kept": kept, "partial": partial, "killed": killed, "trials": _trials(url)}


def describe(result: dict[str, object]) -> dict[str, str]:
    """Per fault point: what the killed trial held, and how it ended after the resume."""
    trials: list[FrozenTrial] = result["trials"]  # type: ignore[assignment]
    out = {}
    for point, (number, held) in result["killed"].items():  # type: ignore[attr-defined]
        if number is None:
            out[point] = held
            continue
        t = trials[number]
        again = any(r.system_attrs.get("failed_trial") is not None
                    and r.system_attrs.get("retry_history", [None])[-1] == number
                    for r in trials)
        capped = len(t.system_attrs.get("retry_history", [])) + 1 > MAX_RETRY
        chosen = len(t.params) == N_PARAMS or t.system_attrs.get("fixed_params")
        end = "result kept" if is_measured(t) else (
            "config measured again" if again else
            f"{t.state.name}, no config chosen to retry" if not chosen else
            f"{t.state.name}, not retried" + (" (retry cap)" if capped else ""))
        out[point] = f"{held}: {end}"
    return out


def _check(result: dict[str, object]) -> None:
    trials: list[FrozenTrial] = result["trials"]  # type: ignore[assignment]
    kept: dict[int, float | None] = result["kept"]  # type: ignore[assignment]
    partial: dict[int, dict] = result["partial"]  # type: ignore[assignment]
    assert count_measured(trials) == N_MEASUREMENTS
    assert not [t.number for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    configs = [tuple(sorted(t.params.items())) for t in trials if is_measured(t)]
    assert len(configs) == len(set(configs)), "a config was measured twice"
    _check_retries(trials)
    assert kept, "no kill landed after a whole result was stored"
    assert partial, "no kill landed inside a result's writes"
    for number, value in kept.items():  # a result that reached storage is kept
        t = trials[number]
        assert is_measured(t), f"trial {number}'s stored result was dropped"
        if value is not None:
            assert t.state == TrialState.COMPLETE and t.value == value
    for number, params in partial.items():  # a partial result is not a measurement...
        assert not is_measured(trials[number])
        retried = [t for t in trials if t.system_attrs.get("failed_trial") is not None
                   and t.params == params and is_measured(t)]
        died = [t for t in trials if t.params == params and not is_measured(t)]
        # ...and its config is measured again, unless it killed its worker too often
        assert retried or len(died) > MAX_RETRY, f"trial {number}'s config was not re-measured"


def _check_retries(trials: list[FrozenTrial]) -> None:
    """A retry measures exactly the config of the trial it retries, never a completion of
    some of its parameters."""
    for retry in trials:
        history = retry.system_attrs.get("retry_history")
        if not history or not retry.params:
            continue
        dead = trials[history[-1]]
        assert len(dead.params) == N_PARAMS, (
            f"trial {retry.number} retries trial {dead.number}, killed with only "
            f"{sorted(dead.params)} chosen")
        assert retry.params == dead.params, f"trial {retry.number} measured another config"


def test_kill_while_choosing_a_config_retries_no_partial_config(tmp_path: Path) -> None:
    """Killed after 2 of its 6 parameters: the trial is failed, not retried with those 2
    fixed (the sampler would fill in the rest: a config nobody proposed)."""
    url = _sqlite(tmp_path)
    killed = _tune(url, f"param:{N_PARAMS + 2}", 1)  # the 2nd parameter of the 2nd trial
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    dead = next(t for t in _trials(url) if t.state == TrialState.RUNNING)
    assert len(dead.params) == 2
    final = _tune(url, None, 2)
    assert final.returncode == 0, final.stderr
    trials = _trials(url)
    assert trials[dead.number].state == TrialState.FAIL
    assert "no config is retried" in trials[dead.number].system_attrs["fail_reason"]
    assert not [t.number for t in trials
                if t.system_attrs.get("retry_history", [None])[-1] == dead.number]
    _check_retries(trials)
    assert count_measured(trials) == N_MEASUREMENTS


def _sqlite(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'fm.db'}"


def _journal(tmp_path: Path) -> str:
    return str(tmp_path / "fm.log")


@pytest.mark.skipif(server_bin() is None, reason="no PostgreSQL server binaries")
def test_kill_at_every_write_point_on_every_storage(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "j").mkdir()
    with postgres_server() as pg_url, ThreadPoolExecutor(3) as pool:
        runs = {
            "sqlite": pool.submit(_run_matrix, _sqlite(tmp_path / "s")),
            "journal": pool.submit(_run_matrix, _journal(tmp_path / "j"), BOUNDARY_POINTS),
            "postgresql": pool.submit(_run_matrix, pg_url, BOUNDARY_POINTS),
        }
        results = {name: run.result() for name, run in runs.items()}
    for name, result in results.items():
        try:
            _check(result)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
