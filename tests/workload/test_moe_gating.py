"""The MoE router's gating as a problem: CANN's host tiling (MoeGatingTopKSoftmaxPerf's
rules) is a feasible point of the tiling space, the rules refuse what the kernel cannot
hold or would run idle, and only a MoE model's step has the call, at its own roofline."""

from __future__ import annotations

import pytest

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.workload import forward
from aoe_optuna.workload.forward import forward_workload
from aoe_optuna.workload.hf_config import read_hf_config
from aoe_optuna.workload.models import builtin_architecture
from aoe_optuna.workload.moe_gating import (
    MoeGating,
    cann_tiling,
    gating_space,
    step_gating,
    ub_needed,
)
from tests.workload.conftest import MODELS_DIR


@pytest.mark.parametrize(("rows", "expected"), [
    (1, {"tile_rows": 1, "cores": 1}),
    (16, {"tile_rows": 1, "cores": 16}),
    (100, {"tile_rows": 3, "cores": 34}),  # blockFormer 3, blockNum ceil(100 / 3)
    (4096, {"tile_rows": 43, "cores": 48}),  # 86 rows per core, two passes of UB
])
def test_cann_tiling_follows_the_host_rules_and_is_feasible(
        profile: SocProfile, rows: int, expected: dict[str, int]) -> None:
    p = MoeGating(rows, 128, 8)
    cann = cann_tiling(profile, p)
    assert cann == {**expected, "col_tile": 128, "double_buffer": 1}
    space = gating_space(profile, p)
    assert bool(space.is_feasible(space.index(cann))), space.explain(cann)
    if cann["tile_rows"] < -(-rows // cann["cores"]):  # split only because UB is full
        assert ub_needed(p, -(-rows // cann["cores"]), 128, 2) > profile.ub_bytes


def test_rules_refuse_idle_cores_oversized_tiles_and_ub_overflow(profile: SocProfile) -> None:
    space = gating_space(profile, MoeGating(16, 128, 8))
    ok = {"tile_rows": 1, "col_tile": 128, "cores": 16, "double_buffer": 1}
    assert space.explain(ok) == []
    assert any("cores over the rows" in r for r in space.explain({**ok, "cores": 24}))
    assert any("tile_rows over a core" in r for r in space.explain({**ok, "tile_rows": 2}))
    assert any("col_tile over the aligned row" in r
               for r in space.explain({**ok, "col_tile": 256}))
    big = gating_space(profile, MoeGating(4096, 1024, 8))
    reasons = big.explain({"tile_rows": 256, "col_tile": 1024, "cores": 16,
                           "double_buffer": 1})
    assert any(r.startswith("UB: needs") for r in reasons)


def test_a_bad_problem_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^moe gating: rows, experts and top_k"):
        MoeGating(1, 8, 9)
    with pytest.raises(ValueError, match=r"^moe gating: dtype expected one of"):
        MoeGating(1, 8, 2, "int3")


def test_only_a_moe_model_gates_once_per_moe_layer_over_every_token() -> None:
    qwen3, _ = read_hf_config(MODELS_DIR / "qwen3-30b-a3b.json")
    assert step_gating(qwen3, "decode", 4, 1024, "fp16") == [(MoeGating(4, 128, 8), 48)]
    assert step_gating(qwen3, "prefill", 2, 512, "bf16") == [
        (MoeGating(1024, 128, 8, "bf16"), 48)]
    assert step_gating(builtin_architecture("qwen2.5-7b"), "decode", 1, 1024, "fp16") == []


def test_the_step_charges_the_gating_at_its_roofline_or_its_model(
        profile: SocProfile, monkeypatch: pytest.MonkeyPatch) -> None:
    qwen3, _ = read_hf_config(MODELS_DIR / "qwen3-30b-a3b.json")
    plain = forward_workload(profile, qwen3, "decode", 8)
    gating = MoeGating(8, 128, 8)
    with monkeypatch.context() as m:  # the same step without the gating call
        m.setattr(forward, "step_gating", lambda *args: [])
        without = forward_workload(profile, qwen3, "decode", 8)
    added = plain.details["elementwise_s"] - without.details["elementwise_s"]
    assert added == pytest.approx(48 * gating.roofline_s(profile), rel=1e-9)
    assert plain.fixed_s - without.fixed_s == pytest.approx(added, rel=1e-9)
    tuned = forward_workload(profile, qwen3, "decode", 8, vector_model=lambda op: 1e-5,
                             tuned=("vector",))
    calls = {c.name: c for c in tuned.layer_ops}
    assert calls["moe_gating"].problem == gating and calls["moe_gating"].count == 48
    assert (calls["moe_gating"].part, calls["moe_gating"].kind) == ("vector", "moe_gating")
    dense = forward_workload(profile, builtin_architecture("qwen2.5-7b"), "decode", 8,
                             vector_model=lambda op: 1e-5, tuned=("vector",))
    assert all(c.kind != "moe_gating" for c in dense.layer_ops)
