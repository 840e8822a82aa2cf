"""ReplayBackend: the space a recorded file gives, its known constraints, its measurements."""

from __future__ import annotations

import json
from pathlib import Path

import json5
import numpy as np
import optuna
import pytest
from kt_fixture import TABLE, shared_spaces, write_cache

from aoe_optuna.backends.replay.backend import ReplayBackend, replay_space
from aoe_optuna.backends.replay.kt_cache import read_cache
from aoe_optuna.spec.loader import SpecError, load_spec
from aoe_optuna.study.run.objective import Evaluator, MeasurementFailed, TuningObjective

GEMM = shared_spaces() / "gemm_RTX_2080_Ti.json.gz"
GEMM_RULES = [
    "KWG % KWI == 0",
    "MWG % (MDIMC * VWM) == 0",
    "NWG % (NDIMC * VWN) == 0",
    "MWG % (MDIMA * VWM) == 0",
    "NWG % (NDIMB * VWN) == 0",
    "KWG % ((MDIMC * NDIMC) / MDIMA) == 0",
    "KWG % ((MDIMC * NDIMC) / NDIMB) == 0",
]


def test_space_keeps_varying_params_and_recorded_rule(tmp_path):
    space = ReplayBackend.search_space({"path": str(write_cache(tmp_path))}, "<test>")
    assert space.names == ("a", "b", "d") and space.fixed == {"c": 4}
    assert space.size == 12
    # recorded minus the two failures? No: failures were measured, they stay feasible
    # (unknown constraints); only InvalidConfig and unrecorded configs are excluded.
    assert space.n_feasible == len(TABLE)
    rows = np.array([space.index({"a": a, "b": b, "d": d})
                     for a in (1, 2, 3) for b in (1, 2) for d in (0, 1)])
    ok = space.is_feasible(rows)
    expected = [(a, b, d) in TABLE for a in (1, 2, 3) for b in (1, 2) for d in (0, 1)]
    assert ok.tolist() == expected
    assert "not a valid config recorded" in space.explain({"a": 2, "b": 1, "d": 1})[0]


def test_invalid_config_entries_are_known_infeasible(tmp_path):
    path = write_cache(tmp_path)
    path.write_text(path.read_text().replace('"CompilationFailedConfig"', '"InvalidConfig"'))
    space = ReplayBackend.search_space({"path": str(path)}, "<test>")
    assert space.n_feasible == len(TABLE) - 1
    assert not space.is_feasible(space.index({"a": 1, "b": 1, "d": 1})[None, :])[0]
    m = ReplayBackend.from_options({"path": str(path)}).measure({"a": 1, "b": 1, "c": 4, "d": 1})
    assert not m.ok and m.failure_kind == "infeasible"


def test_measurements_serve_recorded_times_failures_and_costs(tmp_path):
    backend = ReplayBackend.from_options({"path": str(write_cache(tmp_path, gz=True))})
    ok = backend.measure({"a": 2, "b": 2, "c": 4, "d": 1})
    assert ok.ok and ok.latency_s == pytest.approx(4e-3) and ok.cost_s == pytest.approx(0.15)
    build = backend.measure({"a": 1, "b": 1, "c": 4, "d": 1})
    assert (build.ok, build.failure_kind, build.cost_s) == (False, "build", pytest.approx(0.15))
    assert backend.measure({"a": 3, "b": 1, "c": 4, "d": 1}).failure_kind == "runtime"
    missing = backend.measure({"a": 2, "b": 1, "c": 4, "d": 1})
    assert missing.failure_kind == "unsupported" and "not recorded" in missing.reason


def test_study_value_is_one_over_time(tmp_path):
    rec = read_cache(write_cache(tmp_path))
    space = replay_space(rec)
    workload = ReplayBackend.workload({"path": rec.path}, "<test>")
    objective = TuningObjective(space, Evaluator(workload, ReplayBackend(rec), 1.0))
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({"a": 2, "b": 2, "d": 1})
    study.enqueue_trial({"a": 1, "b": 1, "d": 1})
    study.enqueue_trial({"a": 2, "b": 1, "d": 1})
    study.optimize(objective, n_trials=3, catch=(MeasurementFailed,))
    done, failed, pruned = study.trials
    assert done.value == pytest.approx(1 / 4e-3)  # 4 ms -> 250 runs per second
    assert failed.state.name == "FAIL" and failed.user_attrs["failure_kind"] == "build"
    assert pruned.state.name == "PRUNED"


def test_spec_resolves_path_against_its_folder(tmp_path):
    (tmp_path / "data").mkdir()
    write_cache(tmp_path / "data", gz=True)
    spec_path = tmp_path / "study.json"
    spec_path.write_text(json.dumps({
        "backend": {"name": "replay", "path": "data/tiny.json.gz", "recorded_only": False},
        "constraints": ["a * b <= 4"],
    }))
    spec = load_spec(spec_path)
    assert spec.workload.tokens_per_step == 1
    assert spec.space.size == 12 and spec.space.n_feasible == 10  # (3,2,*) broken
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"backend": {"name": "replay", "path": "data/tiny.json.gz",
                                           "objective": "GFLOP/s"}}))
    with pytest.raises(SpecError, match=r"bad.json: key 'backend.objective'"):
        load_spec(bad)
    worse = tmp_path / "worse.json"
    worse.write_text(json.dumps({"backend": {"name": "replay", "path": "data/tiny.json.gz"},
                                 "search_space": {"tile_m": [16, 32]}}))
    with pytest.raises(SpecError, match="search_space"):
        load_spec(worse)


@pytest.mark.skipif(not GEMM.is_file(), reason="../shared/spaces/gemm_RTX_2080_Ti.json.gz absent")
def test_real_gemm_space_sizes_and_shipped_spec(tmp_path):
    # Fixed params (KWG, KWI, STRM, STRN, PRECISION) have one value each, so dropping
    # them leaves the cartesian product unchanged: 4*4*3*3*3*3*4*4*2*2 = 82,944.
    recorded = ReplayBackend.search_space({"path": str(GEMM)}, "<test>")
    assert recorded.size == 82_944 and recorded.n_feasible == 17_956
    shipped = Path(__file__).resolve().parents[3] / "studies" / "replay_gemm_2080ti.json"
    spec_path = tmp_path / "gemm.json"  # the shipped spec, with an absolute path
    doc = json5.loads(shipped.read_text())
    assert doc["constraints"] == GEMM_RULES and doc["backend"]["recorded_only"] is False
    doc["backend"]["path"] = str(GEMM)
    spec_path.write_text(json.dumps(doc))
    spec = load_spec(spec_path)
    assert spec.space.size == 82_944 and spec.space.n_feasible == 17_956
    # The README's restrictions and "only what the file holds" are the same set.
    rows = spec.space.all_feasible()
    assert recorded.is_feasible(rows).all()
