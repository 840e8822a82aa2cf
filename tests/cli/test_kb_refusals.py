"""What a knowledge base refuses, ``aoe-tune`` run in the test's process (its ``main``).

One figure per key: a whole-step study's entries hold the step's tokens/s; an operator
run's shapes, and ``aoe-tune export`` of one of their studies, hold the shape's own
TFLOPS. Neither replaces the other by value: each command refuses in one line naming
the file, the key and both figures, before it measures or writes anything, and
``--kb-replace`` replaces instead, on every command that refuses. An entry whose config
is not its op's space is refused when the file is read, so ``export --header`` never
writes a tiling nobody measured.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from aoe_optuna.cli.main import main
from aoe_optuna.spec.format import read_document
from tests.support.in_process import aoe_tune_here
from tests.support.refusal import refused

ROOT = Path(__file__).resolve().parents[2]
QWEN = ROOT / "studies" / "qwen25_7b_decode_910b2.json"
OLD_KB = ROOT / "tests" / "fixtures" / "kb" / "kb_2851b8d.json"
SHAPES = [(16, 512, 512), (16, 1024, 512)]  # a step of two GEMMs: fast, and two keys
KEY = "Ascend910B2/GemmKernel/fp16 16x512x512 row_major"
SHAPE_STUDY = "ops/gemm_16x512x512_fp16/16x512x512"  # the operator run's study of that shape


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return aoe_tune_here(args, cwd)


def _spec(folder: Path) -> Path:
    doc = read_document(str(QWEN))
    doc["workload"] = {"shapes": [{"M": m, "K": k, "N": n, "dtype": "fp16"} for m, k, n in SHAPES]}
    path = folder / "spec.json"
    path.write_text(json.dumps(doc))
    return path


def _objectives(kb: Path) -> dict[tuple[int, int, int], str]:
    return {(e["M"], e["N"], e["K"]): e["objective"]
            for e in json.loads(kb.read_text())["entries"]}


@pytest.mark.slow  # a step study, an operator run and five more short aoe-tune runs
def test_a_steps_tokens_and_a_shapes_tflops_are_never_compared(tmp_path: Path) -> None:
    spec = str(_spec(tmp_path))
    kb = tmp_path / "kb.json"
    step = _run("--config", spec, "--storage", "sqlite:///step.db", "--study-name", "step",
                "--n-trials", "3", "--sampler", "random", "--no-progress", "--kb", str(kb),
                cwd=tmp_path)
    assert step.returncode == 0, step.stderr
    entries = json.loads(kb.read_text())["entries"]
    assert {e["objective"] for e in entries} == {"tokens/s"}
    assert {e["workload"] for e in entries} == {"shapes (2 shapes)"}
    held = kb.read_bytes()

    # an operator run into the step's knowledge base: refused before the storage is made
    ops = _run("operators", "--config", spec, "--storage", "sqlite:///ops.db", "--study-name",
               "ops", "--n-trials", "8", "--no-progress", "--kb", str(kb), cwd=tmp_path)
    refused(ops, f"--kb: {kb}: {KEY}: the held entry's value is tokens/s of a step of shapes "
             f"(2 shapes) (study step), the new one's TFLOPS of the GEMM shape itself (study "
             f"{SHAPE_STUDY}): another unit, not comparable; write it to another knowledge base "
             "file (--kb), or give --kb-replace to replace the held entry")
    assert not (tmp_path / "ops.db").exists() and kb.read_bytes() == held

    # into a knowledge base of its own it runs, and writes each shape's TFLOPS
    ops_kb = tmp_path / "ops_kb.json"
    ops = _run("operators", "--config", spec, "--storage", "sqlite:///ops.db", "--study-name",
               "ops", "--n-trials", "8", "--no-progress", "--kb", str(ops_kb), cwd=tmp_path)
    assert ops.returncode == 0, ops.stderr
    assert set(_objectives(ops_kb).values()) == {"TFLOPS"}

    # export of one shape's study: the shape's own figure, refused over the step's
    shape = ["export", "--storage", "sqlite:///ops.db", "--study-name", SHAPE_STUDY,
             "--kb", str(kb), "--header", "kb.h"]
    refused(_run(*shape, cwd=tmp_path), f"--kb: {kb}: {KEY}: the held entry's value is "
             "tokens/s of a step", "--kb-replace")
    assert kb.read_bytes() == held and not (tmp_path / "kb.h").exists()
    replaced = _run(*shape, "--kb-replace", cwd=tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert f"kb {kb}: replaced {KEY}: " in replaced.stdout
    assert "(another figure: --kb-replace)" in replaced.stdout
    assert _objectives(kb) == {(16, 512, 512): "TFLOPS", (16, 512, 1024): "tokens/s"}
    own = next(e for e in json.loads(kb.read_text())["entries"] if e["K"] == 512)
    assert own["latency_us"] > 0 and "workload" not in own
    assert (tmp_path / "kb.h").exists()

    # the operator run, resumed with --kb-replace, replaces the other shape's step figure
    ops = _run("operators", "--storage", "sqlite:///ops.db", "--study-name", "ops",
               "--no-progress", "--kb", str(kb), "--kb-replace", cwd=tmp_path)
    assert ops.returncode == 0, ops.stderr
    assert set(_objectives(kb).values()) == {"TFLOPS"}

    # and a step study into the shapes' knowledge base is refused before it measures
    again = _run("--config", spec, "--storage", "sqlite:///step2.db", "--study-name", "step2",
                 "--n-trials", "3", "--no-progress", "--kb", str(kb), cwd=tmp_path)
    refused(again, f"--kb: {kb}: ", "the held entry's value is TFLOPS of the GEMM shape "
             "itself", "the new one's tokens/s of a step of shapes (2 shapes) (study step2)")
    assert not (tmp_path / "step2.db").exists()


@pytest.mark.parametrize("argv", [
    ["--config", str(QWEN), "--kb-replace"],
    ["operators", "--config", str(QWEN), "--kb-replace"],
    ["export", "--study-name", "s", "--kb", "", "--kb-replace"],
], ids=["tune", "operators", "export"])
def test_kb_replace_needs_a_knowledge_base(tmp_path: Path, monkeypatch, capsys,
                                           argv: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--storage", "sqlite:///aoe.db"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ": error: --kb-replace: give --kb too" in err, err
    assert not (tmp_path / "aoe.db").exists()


def _bad_kb(folder: Path, index: int, config: dict) -> Path:
    data = json.loads(OLD_KB.read_text())
    data["entries"][index]["config"] = config
    path = folder / "bad.json"
    path.write_text(json.dumps(data, indent=2))
    return path


# entries of the old knowledge base: 0 a GEMM shape, 12 the attention problem, 13 rmsnorm
ATTENTION = "(Ascend910B2/decode_attention/fp16 batch=1 q_heads=28 kv_heads=4 head_dim=128"
BAD_CONFIGS = [
    (0, {"bogus": 1}, "entries[0] (Ascend910B2/CatlassDecodeLayer/fp16 1x3584x3584 row_major): "
     "config: expected the GEMM's parameters (tile_m, ", "got an unknown parameter 'bogus'"),
    (0, {"tile_m": -5}, "entries[0] (Ascend910B2/CatlassDecodeLayer/fp16 1x3584x3584 "
     "row_major): config.tile_m: expected an integer from 1 to 4096, got -5", ""),
    (12, {"kv_split": 1, "block_tile": 96, "l1_tile": 128, "l0_tile": 64, "pipeline": 2},
     f"entries[12] {ATTENTION}", "config.block_tile: expected one of [128, 256, 512, 1024, "
     "2048, 4096, 8192], got 96"),
    (13, {"tile_len": 4096, "cores": 8, "double_buffer": 1, "warp": 2},
     "entries[13] (Ascend910B2/rmsnorm/fp16 rows=1 width=3584): config: expected the op's "
     "tiling parameters tile_len, cores, double_buffer, got ", "'warp'"),
]


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bad-config")
    run = _run("--config", str(_spec(folder)), "--storage", "sqlite:///aoe.db", "--study-name",
               "s", "--n-trials", "2", "--sampler", "random", "--no-progress", cwd=folder)
    assert run.returncode == 0, run.stderr
    return folder


@pytest.mark.slow  # the study: one aoe-tune run
@pytest.mark.parametrize("index,config,where,expected", BAD_CONFIGS)
def test_export_refuses_a_config_outside_its_ops_space_and_writes_no_header(
        study: Path, tmp_path: Path, index: int, config: dict, where: str, expected: str) -> None:
    bad = _bad_kb(tmp_path, index, config)
    before = bad.read_bytes()
    run = aoe_tune_here(["export", "--storage", f"sqlite:///{study / 'aoe.db'}",
                         "--study-name", "s", "--kb", str(bad), "--header", "kb.h"], tmp_path)
    refused(run, f"aoe-tune export: error: --kb: {bad}: {where}", expected)
    assert bad.read_bytes() == before and not (tmp_path / "kb.h").exists()


@pytest.mark.parametrize("command", [[], ["operators"]], ids=["tune", "operators"])
def test_a_run_refuses_a_config_outside_its_ops_space_before_the_storage(
        tmp_path: Path, command: list[str]) -> None:
    index, config, where, expected = BAD_CONFIGS[0]
    bad = _bad_kb(tmp_path, index, config)
    run = aoe_tune_here([*command, "--config", str(_spec(tmp_path)), "--storage",
                         "sqlite:///aoe.db", "--n-trials", "2", "--no-progress", "--kb",
                         str(bad)], tmp_path)
    refused(run, f"--kb: {bad}: {where}", expected)
    assert not (tmp_path / "aoe.db").exists()


@pytest.mark.slow  # two aoe-tune runs
def test_a_knowledge_base_of_the_old_format_takes_a_new_step_study(tmp_path: Path) -> None:
    kb = tmp_path / "kb.json"
    kb.write_bytes(OLD_KB.read_bytes())
    run = _run("--config", str(QWEN), "--storage", "sqlite:///aoe.db", "--n-trials", "2",
               "--sampler", "random", "--no-progress", "--kb", str(kb), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if line.startswith(f"kb {kb}: ")]
    assert len(lines) == 5 and all(" tokens/s (study " in line for line in lines)
    assert len(json.loads(kb.read_text())["entries"]) == 16
    header = _run("export", "--storage", "sqlite:///aoe.db", "--study-name",
                  "GemmKernel-Ascend910B2-qwen2.5-7b-decode-b1", "--kb", str(kb), "--header",
                  "kb.h", cwd=tmp_path)
    assert header.returncode == 0, header.stderr
    assert "from 11 GEMM entries" in (tmp_path / "kb.h").read_text()
