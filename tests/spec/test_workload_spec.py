"""Workload sections from files: hf_config, shapes, msprof, serving buckets. The canonical form
keeps what was read (a stored study rebuilds without the file; a changed file is another
study), and each malformed file is one line, exit 2, nothing written, through the CLI too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from aoe_optuna.cli.main import main
from aoe_optuna.spec.loader import SpecError, load_spec, spec_from_dict
from aoe_optuna.workload.models import model_workload

STUDIES = Path(__file__).resolve().parents[2] / "studies"
MODELS = STUDIES / "models"
SAMPLE_CSV = STUDIES / "profiles" / "op_summary_qwen25_7b_decode_b1_910b2.csv"


def spec_file(tmp_path: Path, workload: dict[str, Any], files: dict[str, str] | None = None,
              copy: dict[str, Path] | None = None) -> Path:
    """A spec in ``tmp_path`` with its workload files beside it."""
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    for name, src in (copy or {}).items():
        shutil.copy(src, tmp_path / name)
    path = tmp_path / "study.json"
    path.write_text(json.dumps({"workload": workload}))
    return path


def rebuilt(spec: Any) -> Any:
    """The spec a study gives back from storage: its canonical form, no file needed."""
    return spec_from_dict(json.loads(json.dumps(spec.canonical())))


def test_hf_config_relative_to_the_spec_and_stored_without_the_file(tmp_path: Path):
    path = spec_file(tmp_path, {"hf_config": "m/qwen3.json", "batch": [1, 16], "tp": 2},
                     copy={})
    (tmp_path / "m").mkdir()
    shutil.copy(MODELS / "qwen3-30b-a3b.json", tmp_path / "m" / "qwen3.json")
    spec = load_spec(path)
    canon = spec.canonical()["workload"]
    assert canon["name"] == "qwen3" and canon["hf_config"]["num_experts"] == 128
    assert "torch_dtype" not in canon["hf_config"]  # only what the reader uses
    assert canon["batch"] == [1, 16] and "weights" not in canon
    assert spec.default_study_name() == "GemmKernel-Ascend910B2-qwen3-decode-b1_16-tp2"
    assert spec.workload.gemms[0].name == "b1/qkv_proj"
    shutil.rmtree(tmp_path / "m")
    again = rebuilt(spec)
    assert again.workload == spec.workload
    assert again.canonical() == spec.canonical()


def test_a_changed_model_file_is_another_study_an_unread_key_is_not(tmp_path: Path):
    cfg = json.loads((MODELS / "llama-3.1-8b.json").read_text())
    path = spec_file(tmp_path, {"hf_config": "llama.json"}, {"llama.json": json.dumps(cfg)})
    first = load_spec(path).canonical()
    cfg["rope_theta"] = 1.0  # not read: the GEMMs are the same
    (tmp_path / "llama.json").write_text(json.dumps(cfg))
    assert load_spec(path).canonical() == first
    cfg["intermediate_size"] = 14080
    (tmp_path / "llama.json").write_text(json.dumps(cfg))
    assert load_spec(path).canonical() != first


def test_hf_config_of_the_builtin_model_gives_its_workload(tmp_path: Path):
    path = spec_file(tmp_path, {"hf_config": "q.json", "phase": "prefill", "seq_len": 512},
                     copy={"q.json": MODELS / "qwen2.5-7b-instruct.json"})
    spec = load_spec(path)
    builtin = model_workload(spec.profile, "qwen2.5-7b", "prefill", 1, 512)
    assert spec.workload.gemms == builtin.gemms and spec.workload.fixed_s == builtin.fixed_s


def test_serving_buckets_with_weights_and_one_bucket_lists(tmp_path: Path):
    spec = spec_from_dict({"workload": {"batch": [1, 16], "seq_len": [512, 2048],
                                        "weights": [8, 4, 2, 1]}})
    canon = spec.canonical()["workload"]
    assert canon["weights"] == [8, 4, 2, 1]
    assert spec.workload.tokens_per_step == 8 + 4 + 2 * 16 + 16
    assert spec.default_study_name() == "GemmKernel-Ascend910B2-qwen2.5-7b-decode-b1_16-s512_2048"
    assert rebuilt(spec).workload == spec.workload
    one = spec_from_dict({"workload": {"batch": [16], "weights": [3]}})
    assert one.canonical() == spec_from_dict({"workload": {"batch": 16}}).canonical()


def test_shape_list_and_profile_are_stored_as_their_content(tmp_path: Path):
    path = spec_file(tmp_path, {"shapes": "s.csv", "tokens_per_step": 16, "dtype": "bf16"},
                     {"s.csv": "name,M,K,N,count\nqkv,16,3584,4608,28\nlm,16,3584,152064,1\n"})
    spec = load_spec(path)
    assert spec.workload.tokens_per_step == 16 and spec.workload.dtype == "bf16"
    assert spec.default_study_name() == "GemmKernel-Ascend910B2-s-shapes-bf16"
    (tmp_path / "s.csv").unlink()
    assert rebuilt(spec).workload == spec.workload

    path = spec_file(tmp_path, {"msprof": "p.csv", "tokens_per_step": 1, "name": "qwen-b1"},
                     copy={"p.csv": SAMPLE_CSV})
    spec = load_spec(path)
    assert len(spec.workload.gemms) == 5 and spec.workload.fixed_s > 0
    assert spec.default_study_name() == "GemmKernel-Ascend910B2-qwen-b1-profiled"
    (tmp_path / "p.csv").unlink()
    again = rebuilt(spec)
    assert again.workload == spec.workload and again.canonical() == spec.canonical()


BAD = [
    ("unknown dtype", {"shapes": "s.csv"}, {"s.csv": "M,K,N,dtype\n1,2,3,fp8\n"},
     "key 'workload.shapes': expected line 2, column 'dtype' of {dir}/s.csv to be fp16, bf16"),
    ("missing key", {"hf_config": "m.json"}, {"m.json": '{"hidden_size": 8}'},
     "key 'workload.hf_config': expected key 'num_hidden_layers' of {dir}/m.json to be an "
     "integer"),
    ("no gemm", {"msprof": "p.csv"},
     {"p.csv": "OP Type,Task Duration(us),Input Shapes,Input Data Types,Output Shapes\n"
               "RmsNorm,3.0,\"1,8\",FLOAT16,\"1,8\"\n"},
     "key 'workload.msprof': expected column 'OP Type' of {dir}/p.csv to be at least one "
     "MatMul-type operator"),
    ("bad number", {"msprof": "p.csv"},
     {"p.csv": "OP Type,Task Duration(us),Input Shapes,Input Data Types,Output Shapes\n"
               "MatMulV2,fast,\"1,8;8,8\",FLOAT16;FLOAT16,\"1,8\"\n"},
     "expected line 2, column 'Task Duration(us)' of {dir}/p.csv to be a duration in us"),
    ("missing file", {"shapes": "none.csv"}, {},
     "key 'workload.shapes': expected an existing file (a path relative to the spec), got "
     "'none.csv' (not found)"),
    ("two sources", {"shapes": "s.csv", "model": "qwen2.5-7b"}, {},
     "key 'workload.shapes': expected one source of GEMMs, not both model and shapes"),
    ("model key with shapes", {"shapes": "s.csv", "tp": 2}, {"s.csv": "M,K,N\n1,2,3\n"},
     "key 'workload.tp': expected one of the keys shapes, name, dtype"),
    ("weights count", {"batch": [1, 2], "weights": [1]}, {},
     "key 'workload.weights': expected a list of 2 whole numbers"),
    ("batch twice", {"batch": [4, 4]}, {}, "key 'workload.batch': expected an integer from 1"),
    ("steps inline", {"msprof": {"gemms": [], "other_us": 0}, "steps": 2}, {},
     "key 'workload.steps': expected no steps"),
]


@pytest.mark.parametrize(("workload", "files", "phrase"), [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_workload_file_is_one_spec_error_line(tmp_path: Path, workload, files, phrase):
    path = spec_file(tmp_path, workload, files)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg
    assert phrase.format(dir=tmp_path) in msg, msg


@pytest.mark.parametrize("command", [["describe"], ["--config"]])
def test_cli_refuses_a_bad_workload_file_with_exit_2_and_writes_nothing(
        tmp_path: Path, monkeypatch, capsys, command):
    specs = tmp_path / "specs"
    specs.mkdir()
    path = spec_file(specs, {"msprof": "p.csv"},
                     {"p.csv": "OP Type,Task Duration(us),Input Shapes,Input Data Types,"
                               "Output Shapes\nMatMulV2,4.0,\"1,8;8,8\",FLOAT17;FLOAT17,"
                               "\"1,8\"\n"})
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.chdir(run)  # the default storage, sqlite:///aoe.db, would land here
    args = [*command, str(path)] + (["--n-trials", "2", "--no-progress"]
                                    if command == ["--config"] else [])
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "workload.msprof" in err and "line 2, column 'Input Data Types'" in err
    assert list(run.iterdir()) == []
    assert sorted(p.name for p in specs.iterdir()) == ["p.csv", "study.json"]
