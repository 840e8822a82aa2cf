"""More worker processes or builders than a host can run is refused before any starts:
one line, exit 2, nothing written (--n-workers 5000 started them all: load 136, nothing
measured; --builders 10000 made 197 trials for a budget of 20 and measured nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from aoe_optuna.attrs import ATTR_SURPLUS
from aoe_optuna.cli.common import (
    WORKERS_PER_CPU,
    UsageError,
    check_builders,
    max_builders,
    max_workers,
    parse_workers,
    usable_cpus,
)
from aoe_optuna.cli.main import main
from aoe_optuna.study.run.device_lease import LEASE_DIR_ENV

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")


def _too_many() -> list[list[str]]:
    over = max_workers() + 1
    return [["--n-workers", str(over)], ["--n-workers", "5000"],
            ["--devices", ",".join(map(str, range(over)))]]


@pytest.mark.parametrize("command", ["tune", "operators"])
@pytest.mark.parametrize("extra", _too_many(), ids=["cap+1", "5000", "devices"])
def test_too_many_workers_are_refused_before_anything_starts(
        tmp_path: Path, monkeypatch, capsys, command: str, extra: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    spec = QWEN
    if command == "operators":
        spec = str(tmp_path / "gemm.json")
        Path(spec).write_text(json.dumps({"workload": {"gemm": {"M": 64, "K": 64, "N": 64}}}))
    argv = [*(["operators"] if command == "operators" else []), "--config", spec,
            "--storage", f"sqlite:///{tmp_path}/aoe.db", "--n-trials", "2", "--no-progress",
            *extra]
    before = sorted(p.name for p in tmp_path.iterdir())
    started = time.monotonic()
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    count = len(extra[1].split(",")) if extra[0] == "--devices" else int(extra[1])
    assert err.endswith(f"{extra[0]}: expected at most {max_workers()} worker processes on "
                        f"this host ({WORKERS_PER_CPU} per CPU, {usable_cpus()} CPUs), "
                        f"got {count}"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no storage, no worker
    assert time.monotonic() - started < 30


def test_the_cap_itself_is_taken() -> None:
    cap = max_workers()
    assert parse_workers(None, cap) == ([], cap)
    assert parse_workers(",".join(map(str, range(cap))), None)[1] == cap
    with pytest.raises(UsageError):
        parse_workers(None, cap + 1)


def test_the_cap_follows_the_cpus_this_process_may_use() -> None:
    """Pinned to one CPU (taskset, a container's cpuset), the cap is one CPU's share."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from aoe_optuna.cli.common import max_workers; print(max_workers())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert int(out) == WORKERS_PER_CPU


def _too_many_builders() -> list[list[str]]:
    return [["--builders", str(max_builders(1) + 1)], ["--builders", "10000"],
            ["--n-workers", "2", "--builders", str(max_builders(2) + 1)]]


@pytest.mark.parametrize("command", ["tune", "operators"])
@pytest.mark.parametrize("extra", _too_many_builders(), ids=["cap+1", "10000", "2-workers"])
def test_too_many_builders_are_refused_before_anything_starts(
        tmp_path: Path, monkeypatch, capsys, command: str, extra: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    spec = QWEN
    if command == "operators":
        spec = str(tmp_path / "gemm.json")
        Path(spec).write_text(json.dumps({"workload": {"gemm": {"M": 64, "K": 64, "N": 64}}}))
    argv = [*(["operators"] if command == "operators" else []), "--config", spec,
            "--storage", f"sqlite:///{tmp_path}/aoe.db", "--n-trials", "2", "--no-progress",
            *extra]
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    workers = 2 if "--n-workers" in extra else 1
    assert err.endswith(
        f"--builders: expected at most {max_builders(workers)} per worker on this host "
        f"(each worker has its builders + 1 trials in flight; {workers} worker"
        f"{'s' if workers > 1 else ''}, at most {WORKERS_PER_CPU} trials in flight per CPU, "
        f"{usable_cpus()} CPUs), got {extra[-1]}"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_the_builders_cap_keeps_the_hosts_trials_in_flight_within_the_workers_cap() -> None:
    for workers in (1, 2, max_workers()):
        cap = max_builders(workers)
        check_builders(cap, workers)
        assert workers * (cap + 1) <= max_workers()
        with pytest.raises(UsageError):
            check_builders(cap + 1, workers)
    check_builders(0, max_workers())  # no pool is always allowed


@pytest.mark.slow  # real aoe-tune processes
@pytest.mark.parametrize("command", ["tune", "operators"])
def test_the_most_builders_on_a_small_budget_make_no_trial_per_builder(
        tmp_path: Path, command: str) -> None:
    """Each run's trials in flight are its budget's at most; the lease file is gone."""
    leases = tmp_path / "leases"
    spec = QWEN
    if command == "operators":
        spec = str(tmp_path / "gemm.json")
        Path(spec).write_text(json.dumps({"workload": {"gemm": {"M": 64, "K": 64, "N": 64}}}))
    url = f"sqlite:///{tmp_path}/aoe.db"
    run = subprocess.run(
        [AOE_TUNE, *(["operators"] if command == "operators" else []), "--config", spec,
         "--storage", url, "--n-trials", "6", "--builders", str(max_builders(1)),
         "--sampler", "random", "--no-progress"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, LEASE_DIR_ENV: str(leases)})
    assert run.returncode == 0, run.stderr
    trials = [t for name in optuna.get_all_study_names(url)
              for t in optuna.load_study(study_name=name, storage=url).trials]
    in_flight = [t.user_attrs["in_flight"] for t in trials if "in_flight" in t.user_attrs]
    assert in_flight and max(in_flight) <= 6  # not the builders' 16
    assert len([t for t in trials if t.user_attrs.get(ATTR_SURPLUS)]) < 6
    assert list(leases.iterdir()) == []  # every lease file removed as its timing ended
