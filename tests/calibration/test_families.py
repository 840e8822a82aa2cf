"""Kernel families: one rule for rows, configs and problems, and a profile's constants per
family applied by the simulator to the configs of that family only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aoe_optuna.aicore.gemm.model import GemmModel
from aoe_optuna.aicore.layer_models import layer_charge
from aoe_optuna.calibration.chip_fit import MIN_KERNELS, chip_calibration, fit_families
from aoe_optuna.calibration.families import FAMILIES, band_kind, family_of
from aoe_optuna.hardware.chip_calibration import (
    ChipCalibration,
    FamilyConstants,
    calibration_from_dict,
)
from aoe_optuna.hardware.profile import ProfileError, load_profile
from aoe_optuna.space.kernel_families import gemm_family_index
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.gemm import Gemm
from aoe_optuna.workload.vector_ops import VectorOp

ROOT = Path(__file__).resolve().parents[2]
PROFILE = load_profile("Ascend910B2")


def test_a_configs_family_is_its_template_then_its_dispatch_policy() -> None:
    assert family_of(None) == family_of({}) == "gemm_library"
    assert family_of({"tile_m": 128}) == "gemm_pingpong"
    assert family_of({"preload": 1}) == "gemm_preload"
    assert family_of({"preload": 1, "padding": 1}) == "gemm_padding"
    assert family_of({"preload": 1, "split_k": 4}) == "gemm_split_k"
    assert family_of({"split_k": 1, "preload": 0}) == "gemm_pingpong"
    assert family_of(VectorOp("swiglu", 8, 64)) == "swiglu"
    assert family_of(PrefillAttention(1, 4, 4, 128, 1024)) == "prefill_attention"
    assert set(FAMILIES) >= {"gemm_preload", "rmsnorm", "decode_attention"}
    assert band_kind("gemm_split_k") == "gemm_tiled" and band_kind("gemm_library") == \
        "gemm_library" and band_kind("rmsnorm") == "rmsnorm"


def test_the_vectorised_rule_is_the_one_config_rule() -> None:
    cols = {"preload": np.array([0, 1, 1, 0, 1]), "split_k": np.array([1, 1, 4, 1, 1]),
            "padding": np.array([0, 0, 0, 1, 1])}
    index = gemm_family_index(cols)
    rows = [{k: int(v[i]) for k, v in cols.items()} for i in range(5)]
    from aoe_optuna.space.kernel_families import GEMM_TILED_FAMILIES
    assert [GEMM_TILED_FAMILIES[i] for i in index] == [family_of(r) for r in rows]


def test_the_simulator_scales_each_config_by_its_own_familys_constants() -> None:
    chip = ChipCalibration("Ascend910B2", {"gemm_preload": FamilyConstants(1.5, 2.0)})
    from dataclasses import replace
    calibrated = replace(PROFILE, calibration=chip)
    gemm = Gemm(256, 4096, 4096)
    cols = {"tile_m": np.array([128, 128]), "tile_k": np.array([64, 64]),
            "tile_n": np.array([256, 256]), "preload": np.array([0, 1])}
    base = GemmModel(PROFILE).latency(cols, gemm)
    mine = GemmModel(calibrated).latency(cols, gemm)
    assert mine[0] == base[0]  # ping-pong: not calibrated, the shipped model
    assert mine[1] == pytest.approx(base[1] * 1.5 + 2e-6)


def test_a_layer_family_scales_the_library_charge_only() -> None:
    from dataclasses import replace
    chip = ChipCalibration("Ascend910B2", {"rmsnorm": FamilyConstants(2.0, 0.0)})
    calibrated = replace(PROFILE, calibration=chip)
    op = VectorOp("rmsnorm", 4096, 4096, "fp16")
    assert layer_charge(calibrated, "default")(op) == pytest.approx(
        2 * layer_charge(PROFILE, "default")(op))
    assert layer_charge(calibrated, "best")(op) == layer_charge(PROFILE, "best")(op)
    swiglu = VectorOp("swiglu", 4096, 4096, "fp16")
    assert layer_charge(calibrated, "default")(swiglu) == layer_charge(PROFILE, "default")(
        swiglu)


def test_a_profile_written_before_families_reads_as_one_pair_on_every_gemm_family() -> None:
    chip = calibration_from_dict({"base": "Ascend910B2", "scales": {"gemm": 1.1},
                                  "launch_us": 2.0, "leave_one_out": {"median": 0.05}}, "p")
    assert {f for f in chip.families} == {f for f in FAMILIES if f.startswith("gemm")}
    fit = chip.family("gemm_preload")
    assert fit is not None and (fit.scale, fit.launch_us) == (1.1, 2.0)
    assert fit.report["leave_one_out"] == {"median": 0.05}


@pytest.mark.parametrize(("section", "key"), [
    ({"base": "B", "families": {"gemm_turbo": {"scale": 1.0}}}, "families.gemm_turbo'"),
    ({"base": "B", "families": {"rmsnorm": {"scale": -2}}}, "families.rmsnorm.scale'"),
    ({"base": "B", "families": {}}, "families'"),
])
def test_a_broken_family_section_names_its_key(tmp_path: Path, section: dict, key: str) -> None:
    doc = json.loads((ROOT / "aoe_optuna" / "hardware" / "profiles" / "Ascend910B2.json")
                     .read_text())
    doc["calibration"] = section
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match=key):
        load_profile(str(path))


def test_each_family_is_fitted_from_its_own_kernels_and_a_small_one_refused() -> None:
    """Two families whose pipelines differ (one 20% slower than the model, one 20%
    faster) are each fitted exactly from their own kernels, where one pair over both
    would miss both by about 20%; a family of two kernels is refused, not fitted."""
    rng = np.random.default_rng(1)
    model = rng.uniform(20, 400, 14)
    families = np.array(["gemm_preload"] * 6 + ["gemm_split_k"] * 6 + ["rmsnorm"] * 2)
    measured = model * np.where(families == "gemm_preload", 1.2, 0.8)
    outcomes = {o.family: o for o in fit_families(families, model, measured)}
    assert outcomes["gemm_preload"].fit.scale == pytest.approx(1.2, rel=1e-3)
    assert outcomes["gemm_split_k"].fit.scale == pytest.approx(0.8, rel=1e-3)
    assert outcomes["gemm_preload"].fit.in_sample.median < 1e-3
    assert (outcomes["gemm_preload"].fit.leave_one_out.high
            < outcomes["gemm_preload"].fit.shipped.high)
    small = outcomes["rmsnorm"]
    assert small.fit is None and not small.written and f"at least {MIN_KERNELS}" in str(
        small.refused)
    chip = chip_calibration("Ascend910B2", list(outcomes.values()), {"rows": 14})
    assert set(chip.families) == {"gemm_preload", "gemm_split_k"}
    assert chip.family("gemm_preload").report["kernels"] == 6
