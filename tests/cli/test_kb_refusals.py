"""What a knowledge base refuses, in real aoe-tune processes: an entry whose config is not
its op's space is refused when the file is read, in one line naming the file, the entry,
its key and what was expected, with nothing written, so ``export --header`` never writes
a tiling nobody measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_optuna.spec.format import read_document

ROOT = Path(__file__).resolve().parents[2]
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")
QWEN = ROOT / "studies" / "qwen25_7b_decode_910b2.json"
OLD_KB = ROOT / "tests" / "fixtures" / "kb" / "kb_2851b8d.json"
SHAPES = [(16, 512, 512), (16, 1024, 512)]  # a step of two GEMMs: fast, and two keys


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AOE_TUNE, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _refused(run: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The one-line refusal of a command: exit 2, no traceback, each needle in it."""
    err = run.stderr.strip()
    assert run.returncode == 2, (run.returncode, run.stdout, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def _spec(folder: Path) -> Path:
    doc = read_document(str(QWEN))
    doc["workload"] = {"shapes": [{"M": m, "K": k, "N": n, "dtype": "fp16"} for m, k, n in SHAPES]}
    path = folder / "spec.json"
    path.write_text(json.dumps(doc))
    return path


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


@pytest.mark.slow  # one aoe-tune process each
@pytest.mark.parametrize("index,config,where,expected", BAD_CONFIGS)
def test_export_refuses_a_config_outside_its_ops_space_and_writes_no_header(
        study: Path, tmp_path: Path, index: int, config: dict, where: str, expected: str) -> None:
    bad = _bad_kb(tmp_path, index, config)
    before = bad.read_bytes()
    run = _run("export", "--storage", f"sqlite:///{study / 'aoe.db'}", "--study-name", "s",
               "--kb", str(bad), "--header", "kb.h", cwd=tmp_path)
    _refused(run, f"aoe-tune export: error: --kb: {bad}: {where}", expected)
    assert bad.read_bytes() == before and not (tmp_path / "kb.h").exists()


@pytest.mark.slow  # one aoe-tune process each
@pytest.mark.parametrize("command", [[], ["operators"]], ids=["tune", "operators"])
def test_a_run_refuses_a_config_outside_its_ops_space_before_the_storage(
        tmp_path: Path, command: list[str]) -> None:
    index, config, where, expected = BAD_CONFIGS[0]
    bad = _bad_kb(tmp_path, index, config)
    run = _run(*command, "--config", str(_spec(tmp_path)), "--storage", "sqlite:///aoe.db",
               "--n-trials", "2", "--no-progress", "--kb", str(bad), cwd=tmp_path)
    _refused(run, f"--kb: {bad}: {where}", expected)
    assert not (tmp_path / "aoe.db").exists()
