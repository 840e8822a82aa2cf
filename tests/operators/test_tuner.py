"""An operator study end to end on the simulator and a real SQLite storage."""

from __future__ import annotations

import json
import math
from pathlib import Path

import optuna
import pytest

from aoe_optuna.cli.main import main
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.operators.scheduler import make_scheduler
from aoe_optuna.operators.shapes import operator_shapes
from aoe_optuna.operators.tuner import (
    RETIME_ATTR,
    OperatorTuner,
    TunerOptions,
    best_curve,
    trial_latency,
)
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.objective import is_measured
from aoe_optuna.study.storage import open_storage

SPEC = {
    "op_name": "Gemm",
    "search_space": {"tile_m": [16, 32, 64, 128], "tile_n": [64, 128, 256],
                     "tile_k": [32, 64, 128], "pipeline": [1, 2]},
    "workload": {"model": "qwen2.5-7b", "phase": "decode", "batch": 4},
    "backend": {"name": "simulator", "noise": 0.02, "seed": 3},
}


@pytest.fixture()
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return path


def tuner(tmp_path: Path, spec_file: Path, budget: int, scheduler: str = "gradient",
          warm: bool = True, lines: list[str] | None = None) -> OperatorTuner:
    url = f"sqlite:///{tmp_path / 'ops.db'}"
    options = TunerOptions(budget=budget, scheduler=make_scheduler(scheduler), sampler="tpe",
                           seed=1, warm_start=warm)
    return OperatorTuner(open_storage(url), url, "run", load_spec(spec_file), options,
                         on_event=(lines.append if lines is not None else lambda _: None))


def measured(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.get_trials(deepcopy=False) if is_measured(t)]


def test_budget_is_exact_resume_continues_and_no_config_is_measured_twice(tmp_path, spec_file):
    lines: list[str] = []
    first = tuner(tmp_path, spec_file, 60, lines=lines).run()
    assert first.used <= 60
    retimed = sum(r.retimed for r in first.shapes)
    assert first.used == sum(r.measured for r in first.shapes) + retimed
    assert retimed > 0  # noise 2%: the winners' neighbours in the noise band were re-timed
    names = optuna.get_all_study_names(open_storage(f"sqlite:///{tmp_path / 'ops.db'}"))
    assert sorted(names) == sorted(["run"] + [s.study_name("run") for s in
                                              operator_shapes(load_spec(spec_file).workload)])
    assert any(line.startswith("re-timed") for line in lines)

    second = tuner(tmp_path, spec_file, 100).run()  # the same run, more budget
    assert 60 < second.used <= 100
    t = tuner(tmp_path, spec_file, 100)
    for study in t.studies:
        configs = [json.dumps(tr.params, sort_keys=True) for tr in measured(study)]
        assert len(configs) == len(set(configs))
    # shapes re-timed in the first run keep that re-timing; the cost is counted once
    assert sum(r.retimed for r in second.shapes) == retimed


def test_end_to_end_figure_is_the_workloads_tokens_per_s_of_the_winners(tmp_path, spec_file):
    t = tuner(tmp_path, spec_file, 50)
    result = t.run()
    spec = load_spec(spec_file)
    lat = {n: r.latency_s for r in result.shapes for n in r.shape.names}
    assert result.tokens_per_s == pytest.approx(spec.workload.tokens_per_s(lat))
    assert result.tokens_per_s < result.roofline_tokens_per_s
    for r, study in zip(result.shapes, t.studies, strict=True):
        lo, hi = r.interval_s
        assert lo <= r.latency_s <= hi
        info = study.user_attrs.get(RETIME_ATTR)
        if info and info["trials"]:
            winner = info["trials"][0]
            assert r.trial == winner
            # the re-timings are fresh draws, not the first timing again
            assert r.latency_s != pytest.approx(r.first_s, rel=1e-9)


def test_warm_start_seeds_later_shapes_with_earlier_winners(tmp_path, spec_file):
    t = tuner(tmp_path, spec_file, 45)
    t.run()
    seeded = [tr.user_attrs.get("warm_start") for s in t.studies[1:]
              for tr in s.get_trials(deepcopy=False)]
    assert any(s and s.startswith("shape ") for s in seeded)
    (tmp_path / "cold").mkdir()
    cold = tuner(tmp_path / "cold", spec_file, 45, warm=False)
    cold.run()
    assert not any(tr.user_attrs.get("warm_start") for s in cold.studies
                   for tr in s.get_trials(deepcopy=False))


def test_best_curve_counts_failed_measurements_and_skips_unmeasured(tmp_path, spec_file):
    t = tuner(tmp_path, spec_file, 30)
    t.run()
    for study in t.studies:
        curve = best_curve(study.get_trials(deepcopy=False))
        assert len(curve) == len(measured(study))
        assert all(a >= b for a, b in zip(curve, curve[1:], strict=False))
        done = [trial_latency(tr) for tr in measured(study)]
        assert math.isclose(curve[-1], min(done))


def test_cli_runs_writes_kb_and_exports_then_resumes_from_the_name(tmp_path, spec_file, capsys):
    db = tmp_path / "cli.db"
    kb = tmp_path / "kb.json"
    src = Path(__file__).resolve().parents[2] / "studies" / "kernels" / "gemm_kernel.cpp"
    args = ["operators", "--config", str(spec_file), "--storage", f"sqlite:///{db}",
            "--n-trials", "45", "--sampler", "tpe", "--seed", "0", "--kb", str(kb),
            "--export-dir", str(tmp_path / "k"), "--op-source", str(src), "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "end to end with each shape's winner" in out
    entries = KnowledgeBase.load(kb).entries()
    assert len(entries) == 5 and all(e["objective"] == "TFLOPS" for e in entries)
    assert all(e["latency_interval_us"][0] <= e["latency_us"] <= e["latency_interval_us"][1]
               for e in entries)
    assert len(list((tmp_path / "k").glob("*.cpp"))) == 5
    name = "Gemm-Ascend910B2-qwen2.5-7b-decode-b4-operators"
    assert main(["operators", "--storage", f"sqlite:///{db}", "--study-name", name,
                 "--n-trials", "50", "--no-progress"]) == 0
    parent = optuna.load_study(study_name=name, storage=f"sqlite:///{db}")
    assert parent.user_attrs["budget"] == 50


@pytest.mark.parametrize("extra,message", [
    (["--num-devices", "0"], "--num-devices: expected a positive number"),
    (["--n-trials", "0"], "--n-trials: expected a positive number"),
    (["--devices", "0,x"], "--devices: expected device ids"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, spec_file, capsys, extra,
                                                         message):
    db = tmp_path / "never.db"
    code = main(["operators", "--config", str(spec_file), "--storage", f"sqlite:///{db}",
                 *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert not db.exists()


def test_num_devices_is_refused_for_a_single_gemm_and_sets_tp_for_a_model(tmp_path, capsys):
    gemm = tmp_path / "gemm.json"
    gemm.write_text(json.dumps({"workload": {"gemm": {"M": 64, "K": 64, "N": 64}}}))
    assert main(["operators", "--config", str(gemm), "--num-devices", "2",
                 "--storage", f"sqlite:///{tmp_path / 'x.db'}"]) == 2
    assert "not a model served over devices" in capsys.readouterr().err
    from aoe_optuna.cli.operators import load_spec_for

    model = tmp_path / "m.json"
    model.write_text(json.dumps({"workload": {"model": "qwen2.5-7b", "batch": 8}}))
    spec = load_spec_for(str(model), 4)
    assert spec.workload_doc["tp"] == 4 and spec.workload.details["comm_s"] > 0
    assert {g.name: g.N for g in spec.workload.gemms}["qkv_proj"] == 4608 // 4
