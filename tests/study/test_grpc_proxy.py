"""Workers that share a study through Optuna's gRPC storage proxy, as hosts of a cluster would."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import optuna
import pytest

from aoe_optuna.study.run.objective import count_measured, is_measured

pytest.importorskip("grpc", reason="grpcio not installed (pip install grpcio protobuf)")

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "studies" / "qwen25_7b_decode_910b2.json"
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # a proxy server and three aoe-tune processes
def test_two_workers_through_the_proxy_hold_the_exact_budget(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'behind-proxy.db'}"
    port = _free_port()
    proxy = subprocess.Popen(
        [sys.executable, "-m", "aoe_optuna.study.storage.grpc_proxy", url, str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc = subprocess.run(
            [str(AOE_TUNE), "--config", str(SPEC), "--storage", f"grpc://127.0.0.1:{port}",
             "--study-name", "g", "--n-trials", "8", "--n-workers", "2", "--sampler", "random",
             "--seed", "0", "--no-progress"],
            capture_output=True, text=True, timeout=300,
        )
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr
    trials = optuna.load_study(study_name="g", storage=url).get_trials()
    assert count_measured(trials) == 8
    configs = Counter(tuple(sorted(t.params.items())) for t in trials if is_measured(t))
    assert max(configs.values()) == 1


def test_an_unreachable_proxy_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(AOE_TUNE), "--config", str(SPEC), "--storage", f"grpc://127.0.0.1:{_free_port()}",
         "--n-trials", "3", "--no-progress"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "AOE_GRPC_READY_S": "2"},  # the wait it gives up after
    )
    assert proc.returncode == 2
    err = [line for line in proc.stderr.splitlines() if "Warning" not in line
           and "optuna_warn" not in line]
    assert len(err) == 1 and "cannot reach the proxy" in err[0], proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_proxy_refuses_a_bad_storage_in_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "aoe_optuna.study.storage.grpc_proxy", "nosuch://x", "13999"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert err.startswith("grpc_proxy: error: storage:") and "\n" not in err
    assert "Traceback" not in err
