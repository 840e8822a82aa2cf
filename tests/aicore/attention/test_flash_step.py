"""A prefill flash step as CANN runs it: the softmax at msKPP's rates, bmm1's FixPipe taking
turns with its MMADs where one block fills L0C, the fill and drain of a unit."""

from __future__ import annotations

import pytest

from aoe_optuna.aicore.attention import flash_step
from aoe_optuna.aicore.pipes import vector_pipe
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.prefill_attention import PrefillAttention, cann_default_tiling

PROFILE = load_profile("Ascend910B2")


def test_a_softmax_chunk_is_priced_at_the_measured_rates() -> None:
    """Max, subtract, exp and sum are two-operand-rate passes (32 fp32 a cycle on msKPP's
    910B1), the scale a one-operand pass (64), the cast to fp16 about 128: a 16 x 1024
    chunk cannot take fewer cycles than those passes, and the old count (six ops at 64
    lanes) was about two thirds of it."""
    n = 16 * 1024
    floor = n / 64 + 4 * n / 32 + n / vector_pipe.elements_per_cycle("cast_fp32_fp16")
    cycles = flash_step.softmax_chunk_cycles(16, 1024, "fp16", masked=False, first=False)
    assert floor < cycles < 1.5 * floor
    assert cycles > 1.4 * (6 * n / 64)
    masked = flash_step.softmax_chunk_cycles(16, 1024, "fp16", masked=True, first=False)
    assert masked - cycles == pytest.approx(float(vector_pipe.instruction_cycles("add", n)))


def test_chunks_hold_16384_scores_in_rows_of_eight() -> None:
    assert flash_step.chunk_rows(1024) == 16
    assert flash_step.chunk_rows(2048) == 8
    assert flash_step.chunk_rows(4096) == 4  # fewer than 8 rows fit: as many as fit


def test_bmm1_fixpipe_and_mmads_take_turns_when_a_block_fills_l0c() -> None:
    """A 128 x 256 fp32 base block is the whole 128 KiB L0C: its FixPipe and the next
    block's MMADs cannot overlap, so S over 1024 keys costs four blocks of both; a
    64-row block fits twice and the two overlap."""
    bmm1, _ = flash_step.cube_step_s(PROFILE, 128, 128, 128, 1024, 2)
    clock = PROFILE.clock_hz
    mmad = flash_step._mmad(PROFILE, 128, 128, 256)
    fix = flash_step._fixpipe(PROFILE, 128 * 256 * 4)
    assert bmm1 * clock == pytest.approx(4 * (max(mmad, flash_step._mte1(
        PROFILE, 128 * 128 * 2, 128 * 256 * 2, 2)) + fix))
    half, _ = flash_step.cube_step_s(PROFILE, 64, 128, 128, 1024, 2)
    assert half < 0.75 * bmm1


def test_long_prefill_with_every_core_busy_is_held_by_the_vector_cores() -> None:
    """32 heads of 32k keys: every vector core busy, each unit's step is the softmax of
    its 128 rows on one vector core (CANN deals units to vector cores), slower than the
    two units' matmuls its cube serves; the chip runs at 150-230 TFLOPS, not the 270
    that six vector ops a score at 64 lanes gave."""
    from aoe_optuna.aicore.attention.prefill_attention import prefill_attention_cost

    shape = PrefillAttention(batch=1, q_heads=32, kv_heads=32, head_dim=128, seq_len=32768,
                             causal=False)
    cost = prefill_attention_cost(PROFILE, shape, cann_default_tiling(PROFILE, shape))
    assert cost.vector_s > 2 * cost.cube_s  # a cube serves two vector cores
    tflops = shape.flops / cost.total_s / 1e12
    assert 150 < tflops < 230
