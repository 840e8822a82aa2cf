"""More worker processes than a host can run is refused before any starts: one line,
exit 2, nothing written (--n-workers 5000 started them all: load 136, nothing measured)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aoe_optuna.cli.common import (
    WORKERS_PER_CPU,
    UsageError,
    max_workers,
    parse_workers,
    usable_cpus,
)
from aoe_optuna.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")


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
