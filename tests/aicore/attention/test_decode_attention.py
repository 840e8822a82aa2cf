"""Decode attention on the AI cores: capacity rules, occupancy, bandwidth, the roofline floor,
CANN's default tiling, and forward.py's switch between the roofline and the model."""

from __future__ import annotations

import dataclasses

import pytest

from aoe_optuna.aicore.attention.decode_attention import (
    attention_charge,
    best_tiling,
    decode_attention_cost,
    default_cost,
)
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.decode_attention import (
    AttentionTiling,
    DecodeAttention,
    cann_default_tiling,
    feasible_tilings,
    violations,
)
from aoe_optuna.workload.forward import forward_workload
from aoe_optuna.workload.models import builtin_architecture

PROFILE = load_profile("Ascend910B2")
QWEN_B1_4K = DecodeAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, context=4096)


def test_an_l1_tile_over_capacity_is_refused_and_never_costed() -> None:
    wide = DecodeAttention(batch=1, q_heads=8, kv_heads=8, head_dim=256, context=8192)
    tile = AttentionTiling(kv_split=1, block_tile=2048, l1_tile=2048, l0_tile=64, pipeline=2)
    broken = violations(PROFILE, wide, tile)
    assert any(line.startswith("L1: needs") for line in broken), broken
    assert tile not in feasible_tilings(PROFILE, wide)
    with pytest.raises(ValueError, match="L1: needs"):
        decode_attention_cost(PROFILE, wide, tile)
    # Halving the L1 tile and dropping the second buffer makes it fit.
    assert not violations(PROFILE, wide, dataclasses.replace(tile, l1_tile=512, pipeline=1))


def test_a_big_group_overflows_l0c_with_wide_l1_tiles() -> None:
    mqa = DecodeAttention(batch=1, q_heads=64, kv_heads=1, head_dim=128, context=4096)
    tile = AttentionTiling(kv_split=1, block_tile=2048, l1_tile=1024, l0_tile=128, pipeline=2)
    assert any(line.startswith("L0C") for line in violations(PROFILE, mqa, tile))


def test_batch_1_with_4_kv_heads_gains_from_splitting_the_kv() -> None:
    unsplit = AttentionTiling(kv_split=1, block_tile=512, l1_tile=512, l0_tile=128, pipeline=2)
    split = dataclasses.replace(unsplit, kv_split=6)
    one = decode_attention_cost(PROFILE, QWEN_B1_4K, unsplit)
    six = decode_attention_cost(PROFILE, QWEN_B1_4K, split)
    assert one.busy_cores == 4 and six.busy_cores == 24
    assert six.combine_s > 0.0 == one.combine_s
    assert six.total_s < 0.5 * one.total_s
    best, best_cost = best_tiling(PROFILE, QWEN_B1_4K)
    assert best.kv_split > 1 and best_cost.total_s <= six.total_s


def test_long_context_is_kv_bandwidth_bound_and_linear_in_context() -> None:
    tile = AttentionTiling(kv_split=16, block_tile=2048, l1_tile=512, l0_tile=128, pipeline=2)
    times = {}
    for context in (32768, 65536, 131072):
        cost = decode_attention_cost(PROFILE, dataclasses.replace(QWEN_B1_4K, context=context),
                                     tile)
        assert cost.stream_s > max(cost.cube_s, cost.vector_s)
        times[context] = cost.total_s
    # time = fixed part (launch, combine) + a constant cost per cached token
    step_up = times[131072] - times[65536]
    assert step_up == pytest.approx(2.0 * (times[65536] - times[32768]), rel=0.02)
    assert times[131072] / times[65536] == pytest.approx(2.0, rel=0.1)


@pytest.mark.parametrize("shape", [
    QWEN_B1_4K,
    DecodeAttention(batch=64, q_heads=28, kv_heads=4, head_dim=128, context=1024),
    DecodeAttention(batch=3, q_heads=32, kv_heads=32, head_dim=128, context=2048),
    DecodeAttention(batch=2, q_heads=16, kv_heads=1, head_dim=64, context=640,
                    kv_layout="BSND"),
])
def test_no_tiling_beats_the_roofline(shape: DecodeAttention) -> None:
    tilings = feasible_tilings(PROFILE, shape)
    assert len(tilings) > 100
    for t in tilings:
        cost = decode_attention_cost(PROFILE, shape, t)
        assert cost.total_s >= cost.roofline_s, t


def test_cann_default_follows_incre_flash_attention_rules() -> None:
    # 4 units over 48 vector cores: split 12 would leave 341 tokens a part, so 8 (512 each);
    # a group of 7 Q heads gives sInnerSize 4096, cut to the 512 tokens a part holds.
    assert cann_default_tiling(PROFILE, QWEN_B1_4K) == AttentionTiling(8, 512, 512, 128, 2)
    # A cache of 1024 tokens or less is never split; 64 x 4 units fill the chip anyway.
    assert cann_default_tiling(PROFILE, dataclasses.replace(QWEN_B1_4K, context=1024)).kv_split == 1
    assert cann_default_tiling(PROFILE, dataclasses.replace(QWEN_B1_4K, batch=64)).kv_split == 1
    assert not violations(PROFILE, QWEN_B1_4K, cann_default_tiling(PROFILE, QWEN_B1_4K))


def test_forward_charges_decode_attention_only_when_asked() -> None:
    arch = builtin_architecture("qwen2.5-7b")
    plain = forward_workload(PROFILE, arch, "decode", 1, 4096)
    modelled = forward_workload(PROFILE, arch, "decode", 1, 4096,
                                attention_model=attention_charge(PROFILE, "default"))
    assert "attention_roofline_s" not in plain.details
    assert modelled.details["attention_roofline_s"] == plain.details["attention_s"]
    per_layer = default_cost(PROFILE, QWEN_B1_4K).total_s
    assert modelled.details["attention_s"] == pytest.approx(arch.layers * per_layer)
    assert modelled.details["attention_s"] > plain.details["attention_s"]
    assert modelled.fixed_s - plain.fixed_s == pytest.approx(
        modelled.details["attention_s"] - plain.details["attention_s"])


@pytest.mark.parametrize("group", [1, 2, 8])
def test_the_default_fits_a_256_wide_head(profile, group: int) -> None:
    """Gemma's head_dim 256 overflows L1 and L0B at the 128-wide head's 512/128 tiles; the
    default takes the largest that fit instead of a tiling the model cannot build."""
    shape = DecodeAttention(batch=1, q_heads=8 * group, kv_heads=8, head_dim=256,
                            context=32768)
    t = cann_default_tiling(profile, shape)
    assert violations(profile, shape, t) == []
    assert t.pipeline == 2 and (t.l1_tile, t.l0_tile) < (512, 128)
    narrow = dataclasses.replace(shape, head_dim=128)
    assert cann_default_tiling(profile, narrow).l1_tile == 512  # unchanged where it fit
    assert default_cost(profile, shape).total_s > 0


def test_speculative_query_tokens_fold_into_the_groups_rows() -> None:
    """CANN's IncreFlashAttention folds 2..16 query tokens per sequence with the group
    into one unit's M (gqaMtpFlag_, cubeMSize = group x Q_S): the KV cache is streamed
    once per KV head whatever the tokens, so 16 tokens cost far less than 16 calls."""
    mtp = dataclasses.replace(QWEN_B1_4K, q_tokens=16)
    assert mtp.group_rows == 112 and mtp.row_blocks == 1
    tiling = cann_default_tiling(PROFILE, mtp)  # 112 rows: UB takes smaller, single loads
    one = decode_attention_cost(PROFILE, QWEN_B1_4K, tiling)
    folded = decode_attention_cost(PROFILE, mtp, tiling)
    assert folded.stream_s == pytest.approx(one.stream_s)  # K/V streamed once
    assert folded.busy_cores == one.busy_cores
    assert one.total_s < folded.total_s < 4 * default_cost(PROFILE, QWEN_B1_4K).total_s
    assert mtp.flops == 16 * QWEN_B1_4K.flops


def test_rows_past_one_unit_split_into_more_units_and_bad_token_counts_are_refused() -> None:
    mqa = DecodeAttention(batch=1, q_heads=64, kv_heads=1, head_dim=128, context=4096,
                          q_tokens=8)
    assert mqa.row_blocks == 2 and mqa.group_rows == 256  # 512 rows, 256 per unit
    assert DecodeAttention(batch=1, q_heads=8, kv_heads=8, head_dim=128, context=64,
                           q_tokens=1).q_tokens is None  # one spelling for one token
    with pytest.raises(ValueError, match=r"^q_tokens: expected 1 to 16"):
        DecodeAttention(batch=1, q_heads=8, kv_heads=8, head_dim=128, context=64, q_tokens=17)
