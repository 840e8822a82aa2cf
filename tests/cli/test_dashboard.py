"""The real optuna-dashboard server shows a study made by aoe-tune."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from aoe_optuna.cli.main import main

pytestmark = pytest.mark.slow  # starts the real dashboard server

ROOT = Path(__file__).resolve().parents[2]
AOE = str(ROOT / "studies" / "aoe_config.json")
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def test_dashboard_serves_study_trials_attrs_and_note(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["--config", AOE, "--storage", url, "--study-name", "dash", "--n-trials", "6",
                 "--sampler", "random", "--seed", "0", "--no-progress"]) == 0
    port = _free_port()
    server = subprocess.Popen(
        [str(BIN / "optuna-dashboard"), url, "--host", "127.0.0.1", "--port", str(port),
         "--artifact-dir", str(tmp_path / "aoe.db.artifacts")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        studies = None
        while time.monotonic() < deadline:
            try:
                studies = _get(f"{base}/api/studies")
                break
            except OSError:
                time.sleep(0.3)
        assert studies is not None, "dashboard did not start"
        (entry,) = [s for s in studies["study_summaries"] if s["study_name"] == "dash"]
        detail = _get(f"{base}/api/studies/{entry['study_id']}")
        assert detail["name"] == "dash"
        assert detail["objective_names"] == ["tokens/s"]  # not "Objective 0"
        (spec_artifact,) = [a for a in detail["artifacts"] if a["filename"] == "spec.json"]
        with urllib.request.urlopen(f"{base}/artifacts/{entry['study_id']}/"
                                    f"{spec_artifact['artifact_id']}", timeout=5) as r:
            assert json.loads(r.read())["workload"]["model"] == "qwen2.5-7b"
        keys = {a["key"] for a in detail["user_attrs"]}
        assert {"aoe_spec", "roofline_tokens_per_s"} <= keys
        complete = [t for t in detail["trials"] if t["state"] == "Complete"]
        assert complete, detail["trials"]
        trial_keys = {a["key"] for a in complete[0]["user_attrs"]}
        assert {"tokens_per_s", "roofline_fraction", "latency_us", "constraints"} <= trial_keys
        assert {p["name"] for p in complete[0]["params"]} >= {"tile_m", "tile_k", "tile_n"}
        assert "baseline" in detail["note"]["body"] and "Best config" in detail["note"]["body"]
    finally:
        server.terminate()
        server.wait(timeout=10)
