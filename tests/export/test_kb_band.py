"""A knowledge base entry's band is optional: old entries load, a broken band is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_optuna.export.kb_entry import KBError, make_entry, make_layer_entry, validate_entry

BAND = {"kind": "gemm_tiled", "median": 0.147, "high": 0.201, "high_is": "80th percentile"}


def _entry(**extra: object) -> dict:
    return make_entry("Ascend910B2", "gemm", "fp16", 16, 3584, 4608, "row_major",
                      {"tile_m": 16}, 1.0, None, "s", None, **extra)  # type: ignore[arg-type]


def test_an_entry_without_a_band_is_as_before_and_one_with_it_keeps_it() -> None:
    old = _entry()
    assert "band" not in old and validate_entry(old) == old
    assert _entry(band=BAND)["band"] == BAND
    unchecked = {**BAND, "kind": "rmsnorm", "median": None, "high": None, "high_is": ""}
    entry = make_layer_entry("Ascend910B2", "vector", "rmsnorm", "fp16",
                             {"rows": 1, "width": 3584},
                             {"tile_len": 4096, "cores": 1, "double_buffer": 1}, 10.0, None, "s",
                             None,
                             band=unchecked)
    assert entry["band"] == unchecked


@pytest.mark.parametrize("band", [
    {**BAND, "median": -0.1}, {**BAND, "high": None}, {**BAND, "median": float("nan")},
    {"kind": "gemm_tiled", "median": 0.1}, {**BAND, "kind": ""}, "14%",
])
def test_a_broken_band_is_refused_naming_the_field(band: object) -> None:
    with pytest.raises(KBError, match=r"^entry \(Ascend910B2/gemm/fp16 16x4608x3584 row_major\): "
                       r"band: expected \{kind, median, high, high_is\}"):
        _entry(band=band)


def test_a_simulator_study_of_one_gemm_exports_the_gemm_models_band(tmp_path: Path) -> None:
    from aoe_optuna.calibration.band_kinds import GEMM_TILED
    from aoe_optuna.calibration.bands import shipped_bands
    from aoe_optuna.cli.main import main

    kb = tmp_path / "kb.json"
    spec = Path(__file__).resolve().parents[2] / "studies" / "gemm_4096_910b2.toml"
    assert main(["--config", str(spec), "--storage", f"sqlite:///{tmp_path / 'a.db'}",
                 "--n-trials", "3", "--no-progress", "--kb", str(kb)]) == 0
    entry = json.loads(kb.read_text())["entries"][0]
    gemm = shipped_bands()[GEMM_TILED]  # one GEMM: its own TFLOPS, the GEMM model's band
    assert entry["objective"] == "TFLOPS" and entry["band"]["kind"] == GEMM_TILED
    assert entry["band"]["median"] == pytest.approx(gemm.median, abs=1e-4)
    assert entry["band"]["high"] == pytest.approx(gemm.high, abs=1e-4)
