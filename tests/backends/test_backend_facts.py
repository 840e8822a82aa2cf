"""What a study needs to know of its backend is asked of the backend's class, once."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_timing_noise_is_the_backends_answer() -> None:
    assert backend_class("simulator").timing_noise({"noise": 0.02}) == 0.02
    assert backend_class("simulator").timing_noise({}) is None  # noise-free: nothing to re-time
    assert backend_class("replay").timing_noise({"path": "x"}) is None
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
