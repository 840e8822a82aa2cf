"""A step's tokens/s band: its parts' bands summed on their time shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_optuna.calibration.band_kinds import GEMM_TILED
from aoe_optuna.calibration.bands import Band, shipped_bands
from aoe_optuna.calibration.step_band import MEASURED, StepPart, step_band
from aoe_optuna.calibration.workload_band import workload_band, workload_parts
from aoe_optuna.spec.loader import load_spec

ROOT = Path(__file__).resolve().parents[2]

BANDS = {GEMM_TILED: Band(GEMM_TILED, 30, 4, 0.10, 0.20, "80th percentile", 0.0),
         "rmsnorm": Band("rmsnorm", 0, 0, None, None, "", None)}


def test_the_band_is_the_time_weighted_sum_and_measured_time_adds_nothing() -> None:
    got = step_band([StepPart("GEMMs", GEMM_TILED, 3.0), StepPart("other", MEASURED, 1.0)],
                    BANDS)
    assert got.median == pytest.approx(0.075) and got.high == pytest.approx(0.15)
    assert got.unchecked == ()


def test_an_unchecked_part_is_named_with_its_share_not_given_a_number() -> None:
    got = step_band([StepPart("GEMMs", GEMM_TILED, 3.0), StepPart("vector", "rmsnorm", 1.0)],
                    BANDS)
    assert got.median == pytest.approx(0.075)
    assert got.unchecked == ("vector",) and got.unchecked_share == pytest.approx(0.25)
    assert got.text().endswith("; vector (25% of the step) unchecked")


def test_a_layer_workload_splits_its_parts_by_the_models_that_time_them() -> None:
    spec = load_spec(ROOT / "studies" / "qwen25_7b_decode_layer_910b2.json")
    parts = workload_parts(spec.workload, spec.profile)
    kinds = {p.kind for p in parts if p.name == "vector"}
    assert kinds == {"add_rmsnorm", "rmsnorm", "rope", "swiglu"}
    attention = sum(p.seconds for p in parts if p.name == "attention")
    assert attention == pytest.approx(spec.workload.details["attention_s"])
    band = workload_band(spec.workload, spec.profile, bands=shipped_bands())
    gemm = shipped_bands()[GEMM_TILED]
    assert 0 < band.median < gemm.median  # the unchecked share carries no number
    assert set(band.unchecked) == {"vector"}  # attention is checked, the vector kernels not
