"""The run summary of a simulated study says how far its tokens/s may be off."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.console import Console

from aoe_optuna.backends.registry import backend_class
from aoe_optuna.calibration.band_kinds import GEMM_TILED
from aoe_optuna.calibration.bands import shipped_bands
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.report.summary import Summary, print_summary, simulated_band, summary_markdown

ROOT = Path(__file__).resolve().parents[2]


def _summary(band: str | None) -> Summary:
    return Summary("s", "sqlite:///aoe.db", 80.0, 88.0, {"tile_m": 16}, 3, 110.0, 10, 0, 0, 0,
                   300.0, 1.0, "reached 10 measurements", export_kind="none", band=band)


def test_a_gemm_study_carries_the_gemm_band_and_a_measured_one_none() -> None:
    spec = load_spec(ROOT / "studies" / "gemm_4096_910b2.toml")
    gemm = shipped_bands()[GEMM_TILED]
    text = simulated_band(spec, 8.0e6)
    assert text is not None and text.startswith(f"±{gemm.median:.1%} median, ±{gemm.high:.1%}")
    npu = dataclasses.replace(spec, backend={**spec.backend, "name": "npu"},
                              backend_kind=backend_class("npu"))
    assert simulated_band(npu, 8.0e6) is None
    assert simulated_band(spec, None) is None


def test_the_band_is_printed_whole_at_80_columns_and_in_the_note() -> None:
    spec = load_spec(ROOT / "studies" / "qwen25_7b_decode_layer_910b2.json")
    band = simulated_band(spec, 80.0)
    assert band is not None and "unchecked" in band
    console = Console(width=80, record=True, color_system=None)
    print_summary(_summary(band), console)
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= 80
    assert " ".join(text.split()).count(f"simulated figures: tokens/s band {band}") == 1
    assert f"Simulated figures: tokens/s band {band}." in summary_markdown(_summary(band))
    plain = Console(width=80, record=True, color_system=None)
    print_summary(_summary(None), plain)
    assert "band" not in plain.export_text()
