"""`aoe-tune export --output` without --op-source: the npu backend's kernel, as it builds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_optuna.backends.npu.simple_gemm.kernel import KERNEL_FILE
from aoe_optuna.backends.npu.simple_gemm.render import render_project
from aoe_optuna.cli.main import main
from aoe_optuna.export.kernel_source import HEADER_END, ExportError, ExportInfo
from aoe_optuna.export.npu_kernel import npu_kernel
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config

PROFILE = load_profile("Ascend910B2")
ROOT = Path(__file__).resolve().parents[2]


def _config(**changes: object) -> dict:
    return {**default_config(), "tile_m": 64, "tile_n": 128, **changes}


def test_the_export_is_the_kernel_the_backend_builds_with_its_flags() -> None:
    config = _config(opt_level="O3", schedule="throughput")
    text, flags = npu_kernel(config, PROFILE, "fp16", ExportInfo("s", trial=3, value=2.0))
    header, body = text.split(HEADER_END + "\n", 1)
    built = render_project(config, "fp16", PROFILE, "npu")
    assert body == built[KERNEL_FILE]  # one writer: byte for byte what a candidate builds
    assert flags == ("-O3", "-mllvm", "-misched=ilpmax")
    assert "// build flags: -O3 -mllvm -misched=ilpmax" in header
    assert "by hand" not in header and "constexpr uint32_t TILE_M = 64;" in body
    assert "-mllvm -misched=ilpmax" in built["CMakeLists.txt"]  # the same table built it


def test_a_config_the_simple_kernel_cannot_run_is_one_line() -> None:
    with pytest.raises(ExportError, match="split_k=2: the simple kernel has no such knob"):
        npu_kernel(_config(split_k=2), PROFILE, "fp16")
    with pytest.raises(ExportError, match=r"dtype fp32: the Ascend C kernel implements"):
        npu_kernel(_config(), PROFILE, "fp32")


def test_tuning_a_catlass_study_with_output_is_refused_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = ROOT / "studies" / "gemm_4096_catlass_910b2.toml"
    assert main(["--config", str(spec), "--output", "k.cpp", "--n-trials", "2",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--catlass-header" in err
    assert not (tmp_path / "aoe.db").exists()
