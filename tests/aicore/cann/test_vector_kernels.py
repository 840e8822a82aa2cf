"""CANN's RmsNorm, AddRmsNorm and SwiGlu as their host tiling splits them and their
kernels run them."""

from __future__ import annotations

import pytest

from aoe_optuna.aicore.cann import add_rms_norm as cann_add_rms_norm
from aoe_optuna.aicore.cann import rms_norm as cann_rms_norm
from aoe_optuna.aicore.cann import swiglu as cann_swiglu
from aoe_optuna.aicore.pipes import transfer, vector_pipe
from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.hardware.profile import load_profile

PROFILE = load_profile("Ascend910B2")  # 48 vector cores, 192 KiB of UB each


@pytest.mark.parametrize(("width", "dtype", "mode"), [
    (768, "fp16", "merge_n"), (2000, "fp32", "merge_n"), (2001, "bf16", "normal"),
    (12288, "fp16", "normal"), (12289, "bf16", "split_d"), (10240, "fp32", "normal"),
    (10241, "fp32", "split_d"),
])
def test_the_rms_norm_kernel_follows_the_padded_row(width: int, dtype: str, mode: str) -> None:
    assert cann_rms_norm.tiling(PROFILE, 4096, width, dtype).mode == mode


def test_rms_norm_rows_go_to_cores_in_blocks_and_merge_n_packs_what_ub_holds() -> None:
    t = cann_rms_norm.tiling(PROFILE, 231, 768, "fp16")
    assert (t.rows_per_core, t.cores) == (5, 47)  # ceil(231 / 48) rows, ceil(231 / 5) cores
    # (192 KiB - 1 KiB) // (16 x 768 + 260): rms_norm_tiling.cpp line 469
    assert t.rows_per_pass == 15
    assert cann_rms_norm.tiling(PROFILE, 1000, 2, "bf16").col_align == 16  # 32 B a row


def test_a_normal_row_is_one_pass_so_time_grows_by_a_row_period() -> None:
    ten = cann_rms_norm.rms_norm_cost(PROFILE, 48 * 10, 4096, "bf16")
    twenty = cann_rms_norm.rms_norm_cost(PROFILE, 48 * 20, 4096, "bf16")
    period = max(ten.compute_s, ten.copy_in_s, ten.copy_out_s)
    assert twenty.total_s - ten.total_s == pytest.approx(10 * period, rel=0.6)
    assert twenty.total_s - ten.total_s > 10 * ten.compute_s


def test_rows_far_shorter_than_a_tile_are_bound_by_their_runs_not_their_bytes() -> None:
    narrow = cann_rms_norm.rms_norm_cost(PROFILE, 480_000, 2, "bf16")
    wide = cann_rms_norm.rms_norm_cost(PROFILE, 480_000 // 64, 128, "bf16")  # same bytes
    assert narrow.total_s > 4 * wide.total_s
    hbm = 2 * 480_000 * 2 * 2 / PROFILE.hbm_bandwidth()
    assert narrow.total_s > 5 * (KERNEL_LAUNCH_S + hbm)


def test_a_row_of_a_few_bytes_is_one_request_on_its_core_not_a_padded_burst() -> None:
    """A 4 B row is one masked 32 B block: it pays its run's request on the core that
    copies it and no DataCopyPad tail, so a million such rows over 48 cores cost about
    a run per row and direction on the busiest core (tens of microseconds, not the
    milliseconds a chip-wide partial-block rate charged)."""
    assert vector_pipe.pad_bursts(100, 4) == 0.0
    cost = cann_rms_norm.rms_norm_cost(PROFILE, 1_000_003, 2, "bf16")
    runs = 2 * cost.tiling.rows_per_core
    assert cost.total_s < KERNEL_LAUNCH_S + runs * 4 * transfer.STREAM_RUN_L2_S
    assert cost.total_s > KERNEL_LAUNCH_S + runs * transfer.STREAM_RUN_HBM_S


def test_an_unaligned_row_longer_than_a_block_pays_a_padded_burst_in_and_out() -> None:
    """DataCopyPad's body-and-tail burst: a 1023-element fp16 row (2046 B) costs the
    core PAD_BURST_CYCLES a row in and a row out over the 1024-element row beside it."""
    aligned = cann_rms_norm.rms_norm_cost(PROFILE, 4221, 1024, "fp16")
    padded = cann_rms_norm.rms_norm_cost(PROFILE, 4221, 1023, "fp16")
    bursts = 2 * padded.tiling.rows_per_core
    assert vector_pipe.pad_bursts(bursts, 2046) == bursts
    assert padded.total_s - aligned.total_s == pytest.approx(
        vector_pipe.pad_bursts_s(PROFILE, bursts), rel=0.15)
    # SwiGlu's two halves in and the output out: three bursts a tile row
    swi = cann_swiglu.swiglu_cost(PROFILE, 3003, 506, "fp16")
    t = swi.tiling
    assert swi.total_s > vector_pipe.pad_bursts_s(PROFILE, 3 * t.tiles_per_core * t.base_rows)


def test_few_narrow_rows_pay_a_run_each_not_the_nd2nz_costs() -> None:
    """A DataCopy of rows of a few bytes into UB pays each run's request and line, not
    the GEMM fit's misaligned-start and partial-line costs of the cube's nd2nz row
    transfers: 1024 rows of SwiGLU's 2-element halves take a few microseconds of copies
    on the cores that launch, not the 20 us those costs charged."""
    cost = cann_swiglu.swiglu_cost(PROFILE, 1024, 1, "fp16")
    assert cost.copy_in_s + cost.copy_out_s < 6e-6
    assert cost.total_s < 2 * KERNEL_LAUNCH_S


def test_the_halving_sum_adds_once_per_level_down_to_a_repeat() -> None:
    one = vector_pipe.repeat_cycles("reduce", 1)
    assert cann_rms_norm.halving_sum_cycles(64) == pytest.approx(one)
    # 4096 -> 2048 -> ... -> 64: six Adds, then the WholeReduceSum
    adds = sum(vector_pipe.instruction_cycles("add", n) for n in (2048, 1024, 512, 256, 128, 64))
    assert cann_rms_norm.halving_sum_cycles(4096) == pytest.approx(adds + one)
    # a width that is not a power of two folds its tail first
    assert cann_rms_norm.halving_sum_cycles(4097) > cann_rms_norm.halving_sum_cycles(4096)


def test_measured_rates_order_the_instructions() -> None:
    # msKPP: a two-operand Add half the rate of Adds, Div a quarter, casts the fastest
    assert vector_pipe.elements_per_cycle("add") == pytest.approx(
        vector_pipe.elements_per_cycle("adds") / 2, rel=0.02)
    assert vector_pipe.elements_per_cycle("div") == pytest.approx(16.0, rel=0.02)
    assert vector_pipe.elements_per_cycle("cast_fp16_fp32") > 2 * vector_pipe.elements_per_cycle(
        "add")


def test_swiglu_walks_columns_down_a_line_and_keeps_the_fewest_tiles() -> None:
    # 1024 rows of two 1024-wide fp16 halves: 9824 elements a double-buffered tile;
    # 9 x 1024 (114 tiles), 12 x 768 (172), 19 x 512 (108), 38 x 256 (108, fewer whole
    # tiles) -- 19 x 512 it is
    t = cann_swiglu.tiling(PROFILE, 1024, 1024, "fp16")
    assert (t.base_rows, t.base_cols, t.tiles, t.cores, t.double_buffer) == (
        19, 512, 108, 48, True)
    # one row longer than a tile: cut at a multiple of 512 B
    long = cann_swiglu.tiling(PROFILE, 1, 1 << 25, "fp16")
    assert (long.base_rows, long.base_cols) == (1, 9728)


def test_swiglu_drops_double_buffering_when_one_tile_a_core_then_suffices() -> None:
    # double buffered: 2 x 4096 a tile, 72 tiles, two a core; one buffer holds 14032
    # elements: 3 x 4096 gives 48 tiles, and the walk down to 18 x 768 keeps 48 tiles
    # in a larger tile
    t = cann_swiglu.tiling(PROFILE, 144, 4096, "fp16")
    assert (t.double_buffer, t.base_rows, t.base_cols, t.tiles, t.tiles_per_core) == (
        False, 18, 768, 48, 1)


def test_swiglu_halves_of_a_few_elements_pay_three_runs_a_row() -> None:
    tiny = cann_swiglu.swiglu_cost(PROFILE, 96_000, 2, "bf16")
    assert tiny.copy_in_s > 1.5 * tiny.copy_out_s  # two halves in, one row out
    wide = cann_swiglu.swiglu_cost(PROFILE, 96_000 // 64, 128, "bf16")  # same bytes
    assert tiny.total_s > 2 * wide.total_s  # 12 times the runs on the busiest core


def test_a_large_swiglu_is_held_to_its_hbm_floor() -> None:
    c = cann_swiglu.swiglu_cost(PROFILE, 8192, 8192, "bf16")
    assert c.total_s >= KERNEL_LAUNCH_S + c.chip_s
    # two halves in from HBM; the half out lands in the clean L2, and only the dirty
    # share of what the 402 MB stream evicts past the usable L2 is written back
    read, write = 8192 * 8192 * 2 * 2, 8192 * 8192 * 2
    back = vector_pipe.written_back_bytes(PROFILE, read, write)
    assert 0 < back < write
    assert c.chip_s == pytest.approx((read + back) / PROFILE.hbm_bandwidth())


@pytest.mark.parametrize(("rows", "width", "dtype", "mode"), [
    (48, 3584, "fp16", "single_n"), (49, 3584, "fp16", "multi_n"), (49, 3584, "bf16", "normal"),
    (4096, 3583, "fp16", "normal"), (4096, 2000, "bf16", "merge_n"), (64, 12289, "fp16", "split_d"),
])
def test_the_add_rms_norm_kernel_follows_rows_per_core_and_the_row(
        rows: int, width: int, dtype: str, mode: str) -> None:
    assert cann_add_rms_norm.tiling(PROFILE, rows, width, dtype).mode == mode


def test_multi_n_takes_the_rows_its_buffers_hold_and_overlaps_its_passes() -> None:
    t = cann_add_rms_norm.tiling(PROFILE, 4096, 3584, "fp16")
    # (192 KiB - 1 KiB - 256 - 2 x 3584) // (16 x 3584 + 64): add_rms_norm_tiling.cpp 398
    assert t.rows_per_pass == 3
    c = cann_add_rms_norm.add_rms_norm_cost(PROFILE, 4096, 3584, "fp16")
    serial = c.passes * (c.copy_in_s + c.compute_s + c.copy_out_s)
    assert c.total_s < 0.7 * serial
    assert c.total_s >= KERNEL_LAUNCH_S + c.chip_s


def test_the_last_normal_row_closes_the_call_with_no_next_copy_in() -> None:
    """One row a core: gamma, the row in, its compute and its copy-out, and no period
    of a next row (whose copy-in would wait on this row's free)."""
    one = cann_rms_norm.rms_norm_cost(PROFILE, 48, 4096, "fp32")
    assert one.passes == 1
    gamma = float(vector_pipe.copy_seconds(PROFILE, 4096 * 4, 4096 * 4, 4096 * 4, 48))
    alone = gamma + one.copy_in_s + one.compute_s + one.copy_out_s
    assert one.total_s == pytest.approx(KERNEL_LAUNCH_S + alone, rel=1e-6)
