"""CANN's fused infer attention on a prefill: SplitCore's dealing of row-by-key blocks
and its split of a row block's keys over cores when the blocks are few."""

from __future__ import annotations

from aoe_optuna.aicore.attention.prefill_attention import default_cost
from aoe_optuna.aicore.cann.fia_prefill import M_BASE, S_INNER, deal, fia_prefill_cost
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.prefill_attention import PrefillAttention

PROFILE = load_profile("Ascend910B2")


def _mha(seq_q: int, keys: int, causal: bool = False) -> PrefillAttention:
    return PrefillAttention(batch=1, q_heads=1, kv_heads=1, head_dim=128, seq_len=seq_q,
                            causal=causal, kv_len=keys)


def test_few_blocks_split_a_row_blocks_keys_over_cores() -> None:
    """128 query rows by 8192 keys: one row block, 8 key blocks, no more blocks than
    cores, so each of 8 cores takes one and their outputs are combined."""
    dealing = deal(_mha(128, 8192), PROFILE.cube_cores)
    assert len(dealing.cores) == 8192 // S_INNER and dealing.max_split == 8
    assert all(len(c) == 1 and c[0].first == c[0].last for c in dealing.cores)


def test_more_blocks_than_cores_take_the_ceiling_each() -> None:
    """2048 rows by 8192 keys: 4 x 8 = 32 blocks on 24 cores, 2 a core (16 cores),
    each row block's keys over 4 cores."""
    dealing = deal(_mha(2048, 8192), PROFILE.cube_cores)
    assert 2048 // M_BASE == 4 and len(dealing.cores) == 16
    assert all(sum(s.last - s.first + 1 for s in c) == 2 for c in dealing.cores)
    assert dealing.max_split == 4 and len(dealing.split) == 4


def test_splitting_keys_makes_one_row_block_cheaper_than_the_prompt_kernel() -> None:
    """PromptFlashAttention runs a 128-row block over all 8192 keys on one vector core;
    FIA spreads the keys over 8 AI cores: a fraction of the time, never under the
    roofline. With every core busy the two agree within a third."""
    few = _mha(128, 8192)
    fia, pfa = fia_prefill_cost(PROFILE, few), default_cost(PROFILE, few)
    assert fia.busy_cores == 8 and fia.combine_s > 0
    assert fia.roofline_s <= fia.total_s < pfa.total_s / 2
    busy = PrefillAttention(batch=1, q_heads=32, kv_heads=32, head_dim=128, seq_len=8192,
                            causal=False)
    ratio = fia_prefill_cost(PROFILE, busy).total_s / default_cost(PROFILE, busy).total_s
    assert 0.67 < ratio < 1.5


def test_a_causal_mask_skips_blocks_but_the_dealing_ignores_it() -> None:
    """Half the blocks of a causal call are skipped, but SplitCore deals them as if
    none were: the cores of the last row blocks still run every key, so the call takes
    about as long as a full one."""
    full, causal = _mha(8192, 8192), _mha(8192, 8192, causal=True)
    a, b = fia_prefill_cost(PROFILE, full), fia_prefill_cost(PROFILE, causal)
    assert b.mean_core_s < 0.65 * a.mean_core_s
    assert b.total_s > 0.85 * a.total_s


def test_a_sliding_window_skips_the_keys_before_it() -> None:
    causal = PrefillAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, seq_len=8192,
                              causal=True)
    window = PrefillAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, seq_len=8192,
                              causal=True, window=1024)
    a, b = fia_prefill_cost(PROFILE, causal), fia_prefill_cost(PROFILE, window)
    assert b.mean_core_s < 0.5 * a.mean_core_s
