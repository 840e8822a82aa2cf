"""Causal prefill attention on the AI cores: capacity rules, causal skipping, growth with the
sequence, CANN's default tiling, the chip floor, and forward.py charging prefill with it."""

from __future__ import annotations

import dataclasses

import pytest

from aoe_optuna.aicore.attention.prefill_attention import (
    best_tiling,
    default_cost,
    prefill_attention_charge,
    prefill_attention_cost,
)
from aoe_optuna.calibration.published_layer_ops import PTO_ISA, SOURCES, of_kernel
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.prefill_attention import (
    PrefillAttention,
    PrefillTiling,
    cann_default_tiling,
    feasible_tilings,
    violations,
)
from aoe_optuna.workload.forward import forward_workload, prefill_attention_shape
from aoe_optuna.workload.models import builtin_architecture

PROFILE = load_profile("Ascend910B2")
QWEN = builtin_architecture("qwen2.5-7b")


def qwen(seq_len: int, causal: bool = True) -> PrefillAttention:
    return dataclasses.replace(prefill_attention_shape(QWEN, 1, seq_len, 1, "fp16"),
                               causal=causal)


def test_an_overflowing_tiling_is_refused_with_the_rule_and_never_costed() -> None:
    shape = qwen(4096)
    tile = PrefillTiling(q_tile=256, kv_tile=1024, l1_tile=256, pipeline=2, dealing="balanced")
    broken = violations(PROFILE, shape, tile)
    assert broken == ["L0C: needs 256 KiB, has 128 KiB"], broken
    assert tile not in feasible_tilings(PROFILE, shape)
    with pytest.raises(ValueError, match="L0C: needs 256 KiB"):
        prefill_attention_cost(PROFILE, shape, tile)
    # One L0C buffer makes the 256-row Q block fit.
    assert not violations(PROFILE, shape, dataclasses.replace(tile, pipeline=1))


def test_wide_heads_overflow_l1_and_ub() -> None:
    wide = PrefillAttention(batch=1, q_heads=8, kv_heads=8, head_dim=1024, seq_len=4096)
    tile = PrefillTiling(q_tile=256, kv_tile=512, l1_tile=512, pipeline=2, dealing="cyclic")
    broken = violations(PROFILE, wide, tile)
    assert any(line.startswith("L1: needs") for line in broken), broken
    assert any(line.startswith("UB: needs") for line in broken), broken


@pytest.mark.parametrize("seq_len", [1024, 4096, 32768])
def test_cann_default_is_feasible_for_qwen(seq_len: int) -> None:
    shape = qwen(seq_len)
    t = cann_default_tiling(PROFILE, shape)
    assert violations(PROFILE, shape, t) == []
    assert (t.q_tile, t.kv_tile) == (128, 512 if seq_len <= 1024 else 1024)
    cost = default_cost(PROFILE, shape)
    assert cost.total_s >= cost.roofline_s
    assert cost.units == 28 * seq_len // 128


def test_causal_costs_about_half_of_full_attention_at_long_sequence() -> None:
    causal, full = default_cost(PROFILE, qwen(32768)), default_cost(PROFILE, qwen(32768, False))
    assert 0.45 < causal.total_s / full.total_s < 0.6
    # At 1k the diagonal blocks and the per-unit costs weigh more: well over half.
    short = default_cost(PROFILE, qwen(1024)).total_s / default_cost(
        PROFILE, qwen(1024, False)).total_s
    assert short > causal.total_s / full.total_s


def test_cost_grows_about_quadratically_with_the_sequence() -> None:
    """Quadratic work plus per-unit costs linear in the sequence: the ratio approaches
    4 per doubling from below as the sequence grows."""
    t8k, t16k, t32k = (default_cost(PROFILE, qwen(s)).total_s for s in (8192, 16384, 32768))
    assert 3.3 < t16k / t8k < t32k / t16k < 4.0


def test_chip_floor_holds_for_every_feasible_tiling() -> None:
    shape = qwen(2048)
    for t in feasible_tilings(PROFILE, shape):
        cost = prefill_attention_cost(PROFILE, shape, t)
        assert cost.total_s >= cost.roofline_s
        assert cost.busiest_core_s >= cost.mean_core_s


def test_cyclic_dealing_of_causal_blocks_loads_some_cores_more() -> None:
    shape = qwen(4096)
    balanced = cann_default_tiling(PROFILE, shape)
    cyclic = prefill_attention_cost(PROFILE, shape, dataclasses.replace(balanced,
                                                                        dealing="cyclic"))
    assert cyclic.busiest_core_s > default_cost(PROFILE, shape).busiest_core_s


def test_best_is_never_slower_than_the_default() -> None:
    shape = qwen(4096)
    tiling, best = best_tiling(PROFILE, shape)
    assert best.total_s <= default_cost(PROFILE, shape).total_s
    assert not violations(PROFILE, shape, tiling)


def test_forward_charges_prefill_attention_with_the_model() -> None:
    plain = forward_workload(PROFILE, QWEN, "prefill", 1, 4096)
    modelled = forward_workload(PROFILE, QWEN, "prefill", 1, 4096,
                                attention_model=prefill_attention_charge(PROFILE, "default"))
    d = modelled.details
    assert d["attention_roofline_s"] == plain.details["attention_s"]
    assert d["attention_s"] == pytest.approx(
        QWEN.layers * default_cost(PROFILE, qwen(4096)).total_s)
    assert d["attention_s"] > d["attention_roofline_s"]


FUSED = of_kernel("cann_fia", ("aarch64", "x86_64"))
ONE_CORE = of_kernel("pto_flash", ("jit-aarch64", "jit-x86_64"), seq_q=128)


def test_published_figures_are_recorded_with_their_source() -> None:
    assert len(FUSED) == 40 and len(ONE_CORE) == 8
    assert all(p.source == PTO_ISA for p in FUSED + ONE_CORE)
    assert "pto-isa" in SOURCES[PTO_ISA] and "@" in SOURCES[PTO_ISA]


def test_one_core_rate_is_within_30_percent_of_the_published_kernel() -> None:
    """The single-core PTO flash kernel (one 128-row Q block on one AI core, both vector
    cores on its rows: ``cyclic`` dealing; S_kv 1k..8k): the model's kernel time, at no
    fitted constant, stays within 30% of every published figure (0.74 to 1.02 with the
    GEMM constants of 2026-12-05: a check, not a fit)."""
    for p in ONE_CORE:
        shape = PrefillAttention(batch=1, q_heads=1, kv_heads=1, head_dim=p.shape["head_dim"],
                                 seq_len=p.shape["seq_q"], causal=False,
                                 kv_len=p.shape["seq_kv"])
        tiling = dataclasses.replace(cann_default_tiling(PROFILE, shape), dealing="cyclic")
        ratio = prefill_attention_cost(PROFILE, shape, tiling).total_s * 1e6 / p.time_us
        assert 0.7 < ratio < 1.3, (p, ratio)


@pytest.mark.parametrize(("seq_len", "kv_len", "window"), [
    (1000, None, 256), (4096, None, 4096), (4096, None, 5000), (512, 2048, 300), (64, None, 1)])
def test_window_pairs_are_the_masks_count(seq_len: int, kv_len, window: int) -> None:
    shape = PrefillAttention(batch=1, q_heads=4, kv_heads=4, head_dim=64, seq_len=seq_len,
                             kv_len=kv_len, window=window)
    past = shape.keys - seq_len
    brute = sum(min(p + 1, window) for p in range(past, past + seq_len))
    assert shape.pairs == brute


def test_a_sliding_window_streams_and_costs_less(profile) -> None:
    """Rows of a 4096-token window over a 16k prompt see a quarter of the keys the late
    rows of a full causal mask see: fewer FLOPs, fewer streamed blocks, less time; a window
    as long as the prompt changes nothing."""
    full = PrefillAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, seq_len=16384)
    band = dataclasses.replace(full, window=4096)
    t = cann_default_tiling(profile, full)
    assert band.flops < 0.5 * full.flops
    assert band.hbm_bytes == full.hbm_bytes  # every key is still read once
    assert prefill_attention_cost(profile, band, t).total_s < \
        0.7 * prefill_attention_cost(profile, full, t).total_s
    same = dataclasses.replace(full, window=16384)
    assert prefill_attention_cost(profile, same, t).total_s == pytest.approx(
        prefill_attention_cost(profile, full, t).total_s)
    with pytest.raises(ValueError, match="window"):
        dataclasses.replace(full, causal=False, window=4096)


def test_every_core_busy_is_held_to_the_shared_hand_over_floor() -> None:
    """Each unit hands its scores, P and partials between cube and vector cores through
    GM (a small workspace, reused, so through L2): all units at once never move those
    bytes faster than L2 bandwidth, however many cores share the work."""
    from aoe_optuna.aicore.attention.steps import handover_bytes
    shape = PrefillAttention(batch=8, q_heads=32, kv_heads=8, head_dim=128, seq_len=8192,
                             causal=False)
    t = cann_default_tiling(PROFILE, shape)
    blocks = shape.seq_len // t.q_tile
    handed = shape.batch * shape.q_heads * blocks * handover_bytes(
        t.q_tile, shape.keys, 128, 2, shape.keys // t.kv_tile)
    floor = handed / (PROFILE.l2_bandwidth_gbs * 1e9)
    assert prefill_attention_cost(PROFILE, shape, t).total_s >= floor
