"""The step split: GEMMs, attention, vector, communication, and what else fixed_s holds."""

from __future__ import annotations

import math

from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.buckets import serving_workload
from aoe_optuna.workload.forward import forward_workload
from aoe_optuna.workload.gemm import Gemm, Workload
from aoe_optuna.workload.models import builtin_architecture
from aoe_optuna.workload.step_split import describe_split, step_split

PROFILE = load_profile("Ascend910B2")
ARCH = builtin_architecture("qwen2.5-7b")


def test_the_parts_add_up_to_the_roofline_step() -> None:
    wl = forward_workload(PROFILE, ARCH, "decode", 16, 2048, tp=2)
    parts = {p.name: p for p in step_split(wl, PROFILE)}
    assert list(parts) == ["GEMMs", "attention", "vector", "communication"]
    assert math.isclose(sum(p.seconds for p in parts.values()), wl.roofline_step_s(PROFILE))
    assert all(p.roofline_s is None for p in parts.values())


def test_a_modelled_part_shows_its_roofline_charge() -> None:
    wl = forward_workload(PROFILE, ARCH, "decode", 1, 1024, vector_model=lambda op: 1e-5)
    vector = next(p for p in step_split(wl, PROFILE) if p.name == "vector")
    assert vector.seconds == (4 * ARCH.layers + 1) * 1e-5
    assert vector.roofline_s == forward_workload(PROFILE, ARCH, "decode", 1,
                                                 1024).details["elementwise_s"]
    assert "vector 1.13 ms" in describe_split([vector]) and "roofline charge" in \
        describe_split([vector])


def test_buckets_sum_with_their_weights() -> None:
    merged = serving_workload(PROFILE, ARCH, "decode", [1, 64], [1024], weights=[3, 1])
    one = forward_workload(PROFILE, ARCH, "decode", 1, 1024)
    big = forward_workload(PROFILE, ARCH, "decode", 64, 1024)
    attention = next(p for p in step_split(merged, PROFILE) if p.name == "attention")
    assert math.isclose(attention.seconds,
                        3 * one.details["attention_s"] + big.details["attention_s"])


def test_fixed_time_without_named_parts_is_other() -> None:
    wl = Workload("shapes", (Gemm(16, 64, 64, "fp16", "g", 1),), 16, fixed_s=2e-3)
    parts = step_split(wl, PROFILE)
    assert [p.name for p in parts] == ["GEMMs", "other"] and parts[1].seconds == 2e-3
