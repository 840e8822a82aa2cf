"""``aoe-tune recheck``: a knowledge base measured under another compiler is re-timed with
this machine's and updated; one measured here is left alone; a kernel that no longer
builds says so in one line and keeps its entry. ``aoe-tune``'s ``main`` in the test's
process, a real compiler."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest

from aoe_optuna.backends.cpu.backend import CpuBackend
from aoe_optuna.cli.main import main
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import certified_fields, make_entry
from aoe_optuna.spec.format import read_document
from aoe_optuna.study.create import environment_stamp
from tests.support.in_process import aoe_tune_here

ROOT = Path(__file__).resolve().parents[2]
SLOW = {"tile_m": 16, "tile_n": 16, "tile_k": 16, "pipeline": 0, "l1_prefetch": 0,
        "output_align": 0, "opt_level": "O0", "schedule": "default", "unroll_factor": 0,
        "layout": "row_major", "quantization": False}
FAST = {**SLOW, "tile_m": 64, "tile_n": 64, "tile_k": 64, "pipeline": 1, "opt_level": "O3"}


def spec(folder: Path, compiler: str = "cc") -> Path:
    doc = read_document(str(ROOT / "studies" / "cpu_gemm.json"))
    doc["backend"] = {"name": "cpu", "max_seconds": 0.05, "compiler": compiler,
                      "work_dir": str(folder / "builds")}
    path = folder / f"spec-{Path(compiler).name}.json"
    path.write_text(json.dumps(doc))
    return path


def kb(folder: Path, env: dict[str, str], ties: list[dict], m: int = 128) -> Path:
    e = make_entry("Ascend910B2", "GemmKernel", "fp16", m, m, m, "row_major", SLOW, value=0.001,
                   gain=None, study="cpu", storage=None, objective="TFLOPS", latency_us=4000.0,
                   certified=certified_fields((0.0009, 0.0011), ties, 0.9, 6, env))
    base = KnowledgeBase()
    base.merge(e)
    path = folder / "kb.json"
    base.save(path)
    return path


def here() -> dict[str, str]:
    return environment_stamp(CpuBackend(compiler="cc").environment())


def recheck(kb_path: Path, spec_path: Path) -> subprocess.CompletedProcess[str]:
    return aoe_tune_here(["recheck", str(kb_path), "--config", str(spec_path)], Path.cwd())


@pytest.mark.slow
def test_another_compiler_is_re_timed_and_then_left_alone(tmp_path):
    other = {**here(), "compiler": "cc (Debian 11.4.0) 11.4.0"}
    path = kb(tmp_path, other, [FAST])
    run = recheck(path, spec(tmp_path))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("changed Ascend910B2/GemmKernel/fp16 128x128x128 row_major: ")
    assert "compiler: cc (Debian 11.4.0) 11.4.0 -> " in lines[0]
    [e] = KnowledgeBase.load(path).entries()
    assert e["config"]["tile_m"] == 64 and e["env"] == here()  # the tie beat it far
    assert e["ties"] == [] and e["race_measurements"] >= 4
    assert e["interval"][0] <= e["value"] <= e["interval"][1]
    again = recheck(path, spec(tmp_path))
    assert again.returncode == 0
    assert again.stdout.splitlines() == ["current Ascend910B2/GemmKernel/fp16 128x128x128 "
                                         "row_major: measured under this machine's stamp"]
    assert KnowledgeBase.load(path).entries() == [e]


@pytest.mark.slow
def test_a_winner_alone_holds_and_takes_this_machines_figure(tmp_path):
    path = kb(tmp_path, {**here(), "project": "aoe_optuna 0.0.1"}, [], m=64)
    run = recheck(path, spec(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("held Ascend910B2/GemmKernel/fp16 64x64x64 row_major: ")
    assert "project: aoe_optuna 0.0.1 -> aoe_optuna " in run.stdout
    [e] = KnowledgeBase.load(path).entries()
    assert e["config"] == SLOW and e["env"] == here() and e["value"] != 0.001


@pytest.mark.slow
def test_a_kernel_that_no_longer_builds_says_so_and_keeps_its_entry(tmp_path):
    broken = tmp_path / "broken-cc"
    broken.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "broken-cc 99"; '
                      'exit 0; fi\necho "error: this compiler builds nothing" >&2\nexit 1\n')
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    path = kb(tmp_path, here(), [FAST])
    before = path.read_text()
    run = recheck(path, spec(tmp_path, str(broken)))
    assert run.returncode == 3, run.stderr
    assert run.stdout.splitlines() == [run.stdout.strip()]
    assert run.stdout.startswith("could not build Ascend910B2/GemmKernel/fp16 128x128x128 "
                                 "row_major: build: ")
    assert "the entry is kept as it was" in run.stdout
    assert path.read_text() == before


def test_an_old_entry_of_another_figure_is_skipped_in_one_line(tmp_path, capsys):
    old = ROOT / "tests" / "fixtures" / "kb" / "kb_2851b8d.json"
    path = tmp_path / "old.json"
    path.write_text(old.read_text())
    doc = read_document(str(ROOT / "studies" / "cpu_gemm.json"))
    doc["hardware"] = {"soc": "Ascend910B3"}
    (tmp_path / "spec.json").write_text(json.dumps(doc))
    assert main(["recheck", str(path), "--config", str(tmp_path / "spec.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 16 and all(line.startswith("skipped ") for line in lines)
    assert any("a step's tokens/s" in line for line in lines)
    assert any("measured for Ascend910B2; the spec's SoC is Ascend910B3" in line
               for line in lines)
    assert any("a vector kernel's entry" in line for line in lines)
    assert path.read_text() == old.read_text()


@pytest.mark.parametrize("args,needle", [
    (["missing.json", "--config", "studies/cpu_gemm.json"],
     "missing.json: expected an existing knowledge base file"),
    (["KB", "--config", "nope.json"], "nope.json"),
    (["KB"], "the following arguments are required: --config"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, args, needle):
    monkeypatch.chdir(ROOT)
    path = tmp_path / "kb.json"
    path.write_text('{"format": "aoe-kb", "version": 1, "entries": []}\n')
    args = [str(path) if a == "KB" else a for a in args]
    assert main(["recheck", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and err.startswith("aoe-tune recheck")
    assert path.read_text() == '{"format": "aoe-kb", "version": 1, "entries": []}\n'
