"""SoC profiles: every figure sourced, unsettled figures marked, derived peaks, user files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aoe_optuna.hardware.profile import (
    MAX_PROFILE_BYTES,
    ProfileError,
    available_socs,
    load_profile,
)

SOCS = ["Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4"]


def raw(soc: str) -> dict:
    return json.loads(Path(load_profile(soc).path).read_text())


def test_shipped_profiles() -> None:
    assert set(SOCS) <= set(available_socs())


@pytest.mark.parametrize("soc", SOCS)
def test_every_figure_has_a_source(soc: str) -> None:
    p = load_profile(soc)
    figures = raw(soc)["figures"]
    assert set(p.sources) == set(figures)
    assert all(len(src.strip()) > 10 for src in p.sources.values())
    # Unsettled notes give the alternatives and the reason, where the reference disagrees.
    for key in ("hbm_bandwidth_gbs", "macs_per_cycle"):
        assert len(p.unsettled[key]) > 20


def test_hbm_bandwidth_is_marked_unsettled_with_its_alternative() -> None:
    for soc in ("Ascend910B1", "Ascend910B2", "Ascend910B3"):
        assert "1.15-1.38 TB/s" in load_profile(soc).unsettled["hbm_bandwidth_gbs"]


def test_910b1_marks_its_disputed_core_count_and_clock() -> None:
    p = load_profile("Ascend910B1")
    assert {"cube_cores", "cube_clock_mhz"} <= set(p.unsettled)
    assert "25" in p.unsettled["cube_cores"] and "1850" in p.unsettled["cube_clock_mhz"]
    assert "cube_cores" not in load_profile("Ascend910B2").unsettled


@pytest.mark.parametrize("soc, cores, clock, fp16_tflops, hbm_tbs", [
    ("Ascend910B2", 24, 1800, 353.9, 1.6),  # HBM: published kernels exceed the ini's 1.38
    ("Ascend910B3", 20, 1800, 294.9, 1.6),
    ("Ascend910B4", 20, 1500, 245.8, 0.96),
])
def test_derived_figures_match_the_reference(soc: str, cores: int, clock: float,
                                             fp16_tflops: float, hbm_tbs: float) -> None:
    p = load_profile(soc)
    assert (p.cube_cores, p.cube_clock_mhz) == (cores, clock)
    assert p.peak_flops("fp16") / 1e12 == pytest.approx(fp16_tflops, abs=0.05)
    assert p.peak_flops("int8") == 2 * p.peak_flops("fp16")
    assert p.hbm_bandwidth() / 1e12 == pytest.approx(hbm_tbs, abs=0.005)


def test_ai_core_buffers_of_the_910b2() -> None:
    p = load_profile("Ascend910B2")
    assert (p.l1_bytes, p.l0a_bytes, p.l0b_bytes, p.l0c_bytes, p.ub_bytes) == (
        512 * 1024, 64 * 1024, 64 * 1024, 128 * 1024, 192 * 1024)
    assert p.c0 == {"fp16": 16, "bf16": 16, "fp32": 8, "int8": 32}
    assert p.expression_names()["l0a_size"] == 65536


def test_user_profile_file(tmp_path: Path) -> None:
    data = raw("Ascend910B2")
    data["soc"] = "Ascend910B2-lab"
    data["figures"]["cube_cores"] = {"value": 20, "source": "our board, npu-smi info"}
    path = tmp_path / "lab.json"
    path.write_text(json.dumps(data))
    p = load_profile(str(path))
    assert p.soc == "Ascend910B2-lab" and p.cube_cores == 20
    assert p.sources["cube_cores"] == "our board, npu-smi info"
    assert p.path == str(path)


@pytest.mark.parametrize("edit, phrase", [
    (lambda d: d["figures"].pop("l0a_bytes"), "key 'figures.l0a_bytes'"),
    (lambda d: d["figures"]["l0a_bytes"].pop("source"), "key 'figures.l0a_bytes'"),
    (lambda d: d["figures"]["l1_bytes"].update(value=-1), "positive"),
    (lambda d: d["figures"]["cube_cores"].update(value="24"), "expected int"),
    (lambda d: d["figures"]["c0"]["value"].pop("int8"), "missing dtypes ['int8']"),
    (lambda d: d.pop("soc"), "key 'soc'"),
])
def test_bad_user_profile_names_the_key(tmp_path: Path, edit, phrase: str) -> None:
    data = raw("Ascend910B2")
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert phrase in str(info.value) and str(path) in str(info.value)


def test_unknown_soc_and_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="unknown SoC 'Ascend910C'.*Ascend910B2"):
        load_profile("Ascend910C")
    path = tmp_path / "broken.json"
    path.write_text('{"soc": "x",\n "figures": }')
    with pytest.raises(ProfileError, match="line 2"):
        load_profile(str(path))


@pytest.mark.parametrize(("make", "phrase"), [
    (lambda p: os.mkfifo(p), "got something that is not a regular file"),  # read: a hang
    (lambda p: p.mkdir(), "got a folder"),
    (lambda p: p.write_bytes(b'{"soc": "\xff"}'), "expected a profile as UTF-8 JSON text"),
    (lambda p: p.write_bytes(b" " * (MAX_PROFILE_BYTES + 1)), "under 1 MiB"),
])
def test_a_profile_path_that_is_no_profile_file_names_the_file(tmp_path: Path, make,
                                                               phrase: str) -> None:
    path = tmp_path / "chip.json"
    make(path)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert str(info.value).startswith(f"{path}: ") and phrase in str(info.value)
