"""CANN's MLA decode kernel: the host's dealing of blocks to cores and the kernel's costs."""

from __future__ import annotations

import pytest

from aoe_optuna.aicore.attention import mla_attention
from aoe_optuna.aicore.cann.fia_split import block_cost as host_cost
from aoe_optuna.aicore.cann.fia_split import deal
from aoe_optuna.aicore.cann.mla_decode import (
    block_cost,
    cann_mla_decode_cost,
    cann_mla_decode_seconds,
)
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.mla_attention import MlaDecodeAttention

PROFILE = load_profile("Ascend910B2")


def test_the_host_deals_equal_blocks_evenly_and_splits_sequences_across_cores() -> None:
    # 60 sequences x 4 blocks of 512 keys on 24 cores: 10 blocks each, and the 12
    # sequences that straddle two cores are flash-decoding heads
    d = deal(60, 128, 2048, 24)
    assert [len(c) for c in d.cores] == [10] * 24
    assert (d.fd_heads, d.max_split) == (12, 2)
    # fewer blocks than cores: one block per core, every block costed alike
    one = deal(1, 16, 4096, 24)
    assert [len(c) for c in one.cores] == [1] * 8 and one.max_split == 8
    assert sorted(k for c in deal(3, 128, 1000, 24).cores for _, k in c) == [488] * 3 + [512] * 3
    assert host_cost(128, 512) == 6 * 8 + 10 * 8


def test_the_host_split_names_a_bad_shape_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^FIA split: every size must be at least 1"):
        deal(0, 128, 2048, 24)
    with pytest.raises(ValueError, match=r"^FIA split: at most 256 Q heads"):
        deal(1, 512, 2048, 24)


def test_a_block_is_bound_by_its_cache_loads_not_its_heads() -> None:
    """The latent and rope loads of a block (runs of 512 B and 64 B a token) and V read
    again for PV do not shrink with the heads: 64 heads cost nearly what 128 do."""
    full = block_cost(PROFILE, MlaDecodeAttention(60, 128, 2048), 512, 24)
    half = block_cost(PROFILE, MlaDecodeAttention(60, 64, 2048), 512, 24)
    assert 0.85 < (half.qk_s + half.pv_s) / (full.qk_s + full.pv_s) < 1.0
    assert full.softmax_s < full.qk_s + full.pv_s  # the cube, not the vector, sets the pace
    assert half.softmax_s == pytest.approx(full.softmax_s / 2, rel=0.1)


def test_cann_s_kernel_is_slower_than_the_catlass_template_and_above_its_roofline() -> None:
    for batch in (16, 60):
        shape = MlaDecodeAttention(batch, 128, 2048)
        cost = cann_mla_decode_cost(PROFILE, shape)
        # published: 1.53x (b16) and 1.82x (b60) the template's modelled time
        assert cost.total_s > 1.4 * mla_attention.default_cost(PROFILE, shape).total_s
        assert cost.total_s > 2 * cost.roofline_s
        assert cost.total_s == cann_mla_decode_seconds(PROFILE, shape)
    assert cann_mla_decode_cost(PROFILE, MlaDecodeAttention(16, 128, 2048)).combine_s > 0
    assert cann_mla_decode_cost(PROFILE, MlaDecodeAttention(48, 128, 2048)).combine_s == 0


def test_two_query_tokens_cost_more_than_one_and_less_than_two_calls() -> None:
    shape = MlaDecodeAttention(16, 128, 2048)
    one = cann_mla_decode_seconds(PROFILE, shape)
    two = cann_mla_decode_cost(PROFILE, shape, query_tokens=2).total_s
    assert one < two < 2 * one
