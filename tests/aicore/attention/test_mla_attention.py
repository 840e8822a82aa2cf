"""MLA decode attention on the AI cores: the latent read once per head block and split,
occupancy, the buffer rules, catlass's default tiling, the floor, and forward.py charging
DeepSeek's decode and prefill attention with the models."""

from __future__ import annotations

import dataclasses

import pytest

from aoe_optuna.aicore.attention.mla_attention import (
    best_tiling,
    default_cost,
    floor_s,
    kv_miss,
    mla_attention_charge,
    mla_attention_cost,
    roofline_s,
)
from aoe_optuna.aicore.attention.prefill_attention import prefill_attention_charge
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.mla_attention import (
    MlaDecodeAttention,
    MlaTiling,
    catlass_default_tiling,
    feasible_tilings,
    head_tiles,
    violations,
)
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.forward import forward_workload
from aoe_optuna.workload.hf_config import read_hf_config

from ...workload.conftest import MODELS_DIR

PROFILE = load_profile("Ascend910B2")
LITE = read_hf_config(MODELS_DIR / "deepseek-v2-lite.json")[0]
ONE_BLOCK = MlaTiling(head_tile=16, kv_split=1, block_pages=1, resident=1, pipeline=2)


def test_one_head_block_reads_the_latent_once_and_reaches_the_roofline() -> None:
    # 96 sequences fill the 24 cores: bandwidth-bound. One block of all 16 heads reads
    # each sequence's latent once (the roofline); two blocks of 8 read it twice.
    shape = MlaDecodeAttention(batch=96, q_heads=16, context=4096)
    whole = mla_attention_cost(PROFILE, shape, ONE_BLOCK)
    halves = mla_attention_cost(PROFILE, shape, dataclasses.replace(ONE_BLOCK, head_tile=8))
    assert whole.total_s == pytest.approx(shape.kv_bytes / PROFILE.hbm_bandwidth())
    assert kv_miss(shape, ONE_BLOCK) == 1.0
    assert kv_miss(shape, dataclasses.replace(ONE_BLOCK, head_tile=8)) == 0.5
    assert halves.stream_s > whole.stream_s and halves.total_s > 1.3 * whole.total_s


def test_more_heads_share_one_latent_stream() -> None:
    # 16 or 64 heads in one block stream the same latent: the HBM part of the stream
    # does not grow with the heads, only the cube and vector work does.
    few = MlaDecodeAttention(batch=1, q_heads=16, context=8192)
    many = dataclasses.replace(few, q_heads=64)
    t64 = dataclasses.replace(ONE_BLOCK, head_tile=64)
    a, b = mla_attention_cost(PROFILE, few, ONE_BLOCK), mla_attention_cost(PROFILE, many, t64)
    assert few.kv_bytes == many.kv_bytes
    assert b.cube_s > a.cube_s and b.vector_s > a.vector_s
    assert b.stream_s < 1.25 * a.stream_s  # only P's way back grows
    assert b.total_s < 4 * a.total_s


def test_a_kv_split_fills_the_cores_and_pays_a_combine() -> None:
    shape = MlaDecodeAttention(batch=1, q_heads=16, context=8192)
    one = mla_attention_cost(PROFILE, shape, ONE_BLOCK)
    split = mla_attention_cost(PROFILE, shape, dataclasses.replace(ONE_BLOCK, kv_split=24))
    assert one.busy_cores == 1 and split.busy_cores == 24
    assert split.combine_s > 0.0 == one.combine_s
    assert split.total_s < one.total_s / 5
    best, cost = best_tiling(PROFILE, shape)
    assert best.kv_split > 1 and cost.total_s <= split.total_s


def test_keeping_the_latent_in_l1_saves_its_second_read() -> None:
    shape = MlaDecodeAttention(batch=1, q_heads=16, context=8192)
    kept = mla_attention_cost(PROFILE, shape, ONE_BLOCK)
    reread = mla_attention_cost(PROFILE, shape, dataclasses.replace(ONE_BLOCK, resident=0))
    assert reread.stream_s > kept.stream_s


def test_buffer_rules_refuse_what_would_not_build() -> None:
    v3 = MlaDecodeAttention(batch=1, q_heads=128, context=4096)
    two_pages_kept = MlaTiling(head_tile=128, kv_split=1, block_pages=2, resident=1, pipeline=2)
    assert violations(PROFILE, v3, two_pages_kept) == ["L1: needs 784 KiB, has 512 KiB"]
    assert two_pages_kept not in feasible_tilings(PROFILE, v3)
    with pytest.raises(ValueError, match="L1: needs"):
        mla_attention_cost(PROFILE, v3, two_pages_kept)
    assert not violations(PROFILE, v3, dataclasses.replace(two_pages_kept, resident=0))
    assert violations(PROFILE, MlaDecodeAttention(1, 16, 4096),
                      dataclasses.replace(ONE_BLOCK, head_tile=32))[0].startswith("head_tile")
    assert head_tiles(MlaDecodeAttention(1, 16, 4096)) == (8, 16)
    assert head_tiles(MlaDecodeAttention(1, 128, 4096)) == (8, 16, 32, 64, 128)


@pytest.mark.parametrize("shape,expected", [
    # 16 heads, general kernel: one page per step kept in L1; a split only from
    # 24 x 128 x 2 tokens: lcm(1, 24) = 24 parts of 3 pages -> 22 parts.
    (MlaDecodeAttention(1, 16, 4096), MlaTiling(16, 1, 1, 1, 2)),
    (MlaDecodeAttention(1, 16, 8192), MlaTiling(16, 22, 1, 1, 2)),
    (MlaDecodeAttention(20, 16, 8192), MlaTiling(16, 1, 1, 1, 2)),  # batch > 0.8 x 24
    # 128 heads, the TP1 kernel: four pages per step, not kept; split under 0.8 x 24.
    (MlaDecodeAttention(32, 128, 4096), MlaTiling(128, 1, 4, 0, 2)),
    (MlaDecodeAttention(1, 128, 16384), MlaTiling(128, 22, 4, 0, 2)),
])
def test_catlass_default_tiling(shape: MlaDecodeAttention, expected: MlaTiling) -> None:
    assert catlass_default_tiling(PROFILE, shape) == expected
    assert not violations(PROFILE, shape, expected)


def test_no_tiling_beats_the_floor() -> None:
    shape = MlaDecodeAttention(batch=2, q_heads=32, context=2048)
    floor = floor_s(PROFILE, shape)
    assert floor >= roofline_s(PROFILE, shape)
    assert min(mla_attention_cost(PROFILE, shape, t).total_s
               for t in feasible_tilings(PROFILE, shape)) >= floor
    assert best_tiling(PROFILE, shape)[1].total_s <= default_cost(PROFILE, shape).total_s


@pytest.mark.parametrize("tp,heads", [(1, 16), (2, 8)])
def test_forward_charges_deepseek_decode_with_the_mla_model(tp: int, heads: int) -> None:
    charge = mla_attention_charge(PROFILE, "default")
    plain = forward_workload(PROFILE, LITE, "decode", batch=1, seq_len=4096, tp=tp)
    wl = forward_workload(PROFILE, LITE, "decode", batch=1, seq_len=4096, tp=tp,
                          attention_model=charge, tuned=("attention",))
    (call,) = wl.layer_ops
    shape = MlaDecodeAttention(batch=1, q_heads=heads, context=4096)
    assert call.problem == shape and call.count == LITE.layers
    assert call.charged_s == default_cost(PROFILE, shape).total_s
    assert wl.details["attention_roofline_s"] == plain.details["attention_s"]
    assert wl.details["attention_s"] == pytest.approx(LITE.layers * call.charged_s)
    assert wl.details["attention_s"] > plain.details["attention_s"]


def test_forward_charges_deepseek_prefill_with_a_narrower_v() -> None:
    charge = prefill_attention_charge(PROFILE, "default")
    wl = forward_workload(PROFILE, LITE, "prefill", batch=1, seq_len=2048,
                          attention_model=charge, tuned=("attention",))
    (call,) = wl.layer_ops
    shape = call.problem
    assert shape == PrefillAttention(batch=1, q_heads=16, kv_heads=16, head_dim=192,
                                     seq_len=2048, v_head_dim=128)
    wide = dataclasses.replace(shape, v_head_dim=192)
    assert shape.flops == pytest.approx(wide.flops * (192 + 128) / (2 * 192))
    assert shape.hbm_bytes < wide.hbm_bytes
    assert charge(shape) < charge(wide)
    assert dataclasses.replace(wide, v_head_dim=None) == wide  # one spelling of v = d
