"""What a study needs to know of its backend is asked of the backend's class, once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aoe_optuna.backends.base import BackendBase
from aoe_optuna.backends.registry import BACKENDS, backend_class
from aoe_optuna.backends.timing import TimingPolicy
from aoe_optuna.spec.loader import load_spec

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name,roofline,exact", [
    ("simulator", True, True), ("npu", True, False), ("cpu", False, False),
    ("replay", False, False),
])
def test_each_backend_states_its_facts(name: str, roofline: bool, exact: bool) -> None:
    cls = backend_class(name)
    assert cls.has_roofline() is roofline
    assert cls.exact_model is exact


# name: (times the SoC, builds ahead by default, a host core per device, CANN toolchain,
#        how layer kernels are measured, early stop margin of the class)
ANSWERS = {
    "simulator": (False, False, False, False, "model", None),
    "npu": (True, True, True, True, "device", None),
    "cpu": (False, False, False, False, None, None),
    "replay": (False, False, False, False, None, None),
}


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_each_backend_answers_what_the_study_asks(name: str) -> None:
    cls = backend_class(name)
    assert (cls.times_soc(), cls.pooled_by_default, cls.host_core_per_device,
            cls.cann_toolchain, cls.layer_kernels, cls.early_stop_margin) == ANSWERS[name]
    # a backend that times layer kernels on its device runs their programs; no other does
    programs = ("target", "measure_program", "build_program_ahead")
    overridden = {m for m in programs if getattr(cls, m) is not getattr(BackendBase, m)}
    assert overridden == (set(programs) if cls.layer_kernels == "device" else set())


@pytest.mark.parametrize("name,visible,device", [
    ("simulator", None, "simulator-{pid}"),  # this process alone: it times nothing real
    ("replay", None, "replay-{pid}"),
    ("cpu", None, None),  # a host core of its own, which the build pool picks
    ("npu", None, "npu-0"),
    ("npu", "3,5", "npu-3"),  # the worker's card: the first it sees
])
def test_each_backend_names_the_device_a_timing_leases(
        monkeypatch: pytest.MonkeyPatch, name: str, visible: str | None,
        device: str | None) -> None:
    if visible is None:
        monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", visible)
    expected = None if device is None else device.format(pid=os.getpid())
    assert backend_class(name).leased_device() == expected


def test_a_backend_without_programs_refuses_to_time_one(tmp_path: Path) -> None:
    from aoe_optuna.backends.cpu.backend import CpuBackend

    cpu = CpuBackend(work_dir=tmp_path)
    assert cpu.early_stop_margin is None  # the minimum of a window is never cut short
    assert CpuBackend(work_dir=tmp_path, estimator="median").early_stop_margin == 0.10
    with pytest.raises(NotImplementedError, match="^the cpu backend times no kernel programs"):
        cpu.measure_program(object())


def test_timing_noise_is_the_backends_answer(tmp_path: Path) -> None:
    from race_fixture import noisy_cache

    assert backend_class("simulator").timing_noise({"noise": 0.02}) == 0.02
    assert backend_class("simulator").timing_noise({}) is None  # noise-free: nothing to re-time
    assert backend_class("replay").timing_noise({"path": "x", "noise": "none"}) is None
    # a recording's noise: the median config's repeats, as a measurement's standard error
    assert 0 < backend_class("replay").timing_noise({"path": str(noisy_cache(tmp_path))}) < 0.01
    hardware = TimingPolicy().rel_precision
    assert backend_class("npu").timing_noise({}) == backend_class("cpu").timing_noise({}) \
        == hardware


@pytest.mark.parametrize("study,backend,has_roofline", [
    ("qwen25_7b_decode_910b2.json", "simulator", True),
    ("cpu_gemm.json", "cpu", False),
])
def test_a_spec_resolves_its_backend_once(study: str, backend: str, has_roofline: bool) -> None:
    spec = load_spec(ROOT / "studies" / study)
    assert spec.backend_kind is backend_class(backend)
    assert (spec.roofline_tokens_per_s() is not None) is has_roofline
    assert spec.exact_model is (backend == "simulator")


def test_every_registered_backend_is_covered() -> None:
    assert set(BACKENDS) == {"simulator", "npu", "cpu", "replay"}
