"""The real optuna-dashboard server shows a study made by aoe-tune."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from aoe_optuna.cli.main import main
from tests.dashboard.server import dashboard_server, get_json, study_id

pytestmark = pytest.mark.slow  # starts the real dashboard server

ROOT = Path(__file__).resolve().parents[2]
AOE = str(ROOT / "studies" / "aoe_config.json")


def test_dashboard_serves_study_trials_attrs_and_note(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["--config", AOE, "--storage", url, "--study-name", "dash", "--n-trials", "6",
                 "--sampler", "random", "--seed", "0", "--no-progress"]) == 0
    with dashboard_server(url, tmp_path / "aoe.db.artifacts") as base:
        sid = study_id(base, "dash")
        detail = get_json(f"{base}/api/studies/{sid}")
        assert detail["name"] == "dash"
        assert detail["objective_names"] == ["tokens/s"]  # not "Objective 0"
        (spec_artifact,) = [a for a in detail["artifacts"] if a["filename"] == "spec.json"]
        with urllib.request.urlopen(f"{base}/artifacts/{sid}/"
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
        (plot,) = detail["plotly_graph_objects"]
        assert plot["id"] == "convergence"
        figure = json.loads(plot["graph_object"])
        assert figure["layout"]["title"]["text"] == "Convergence against the roofline"
        best = next(t for t in figure["data"] if t["name"] == "best so far")
        assert len(best["x"]) == 6 and best["y"][-1] == max(t["values"][0] for t in complete)
