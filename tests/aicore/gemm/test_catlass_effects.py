"""The effects catlass's kernels show on the chip, one test each, and the calibration bound."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.aicore.gemm import schedule, vector_passes
from aoe_optuna.aicore.gemm.model import GemmModel
from aoe_optuna.aicore.pipes import transfer
from aoe_optuna.calibration import residuals as calibration
from aoe_optuna.calibration.published_gemm import PUBLISHED, RANKING_PAIRS, catlass_multicore_split
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config, to_code
from aoe_optuna.workload.gemm import Gemm


@pytest.fixture(scope="module")
def model() -> GemmModel:
    return GemmModel(load_profile("Ascend910B2"))


def us(model: GemmModel, config: dict, gemm: Gemm) -> float:
    full = {**default_config(), **config}
    cols = {k: np.array([to_code(k, v)]) for k, v in full.items()}
    return float(model.latency(cols, gemm)[0]) * 1e6


def test_calibration_on_published_910b_timings() -> None:
    rows = calibration.table()
    s = calibration.summary(rows)
    assert s["figures"] == len(PUBLISHED) >= 15
    assert s["median_error"] <= 0.10, s
    assert s["max_error"] <= 0.30, [(r.figure.name, round(r.ratio, 2)) for r in rows]
    assert s["pairs_kept"] == s["pairs"] == len(RANKING_PAIRS)


def test_split_k_wins_by_large_factors_on_small_mn_long_k(model) -> None:
    gemm = Gemm(64, 32768, 256)  # one 128x256 block: one core of 24 without a split
    base = us(model, {"layout_b": "col_major"}, gemm)
    split = us(model, {"layout_b": "col_major", "split_k": 16}, gemm)
    assert split < base / 4
    # on a square GEMM that fills the chip, the partial sums only cost
    square = Gemm(4096, 4096, 4096)
    assert us(model, {"split_k": 4}, square) > us(model, {}, square)


def test_mixed_kernels_pay_for_the_vector_cores(model) -> None:
    tiny = Gemm(16, 64, 16)  # one block, one L1 tile: nothing to split or pad
    assert us(model, {"padding": 1}, tiny) > us(model, {}, tiny)
    assert us(model, {"quantization": True}, tiny) > us(model, {}, tiny)


def test_int8_epilogue_is_handed_over_block_by_block() -> None:
    """catlass QuantMatmul dequantizes each block on its own core's vector cores
    while the cube runs the next block: the epilogue shows once, after the last
    block, however many blocks a core runs; only when an epilogue outlasts its
    block's cube work do the vector cores set the pace."""
    profile = load_profile("Ascend910B1")
    model = GemmModel(profile)
    cores = profile.cube_cores
    cfg = {"tile_m": 128, "tile_n": 256, "l1_k": 512, "tile_k": 128, "preload": 1,
           "quantization": True}
    stream = transfer.gm_stream(profile.gm_to_l1_bytes_per_cycle, profile.clock_hz)
    n = 256 * cores
    epilogue_us = 1e6 * float(vector_passes.dequant_block_seconds(
        stream, np.array([128.0]), np.array([256.0]), n, 2.0)[0])
    # long K: the cube's block outlasts its epilogue, which hides under the next block;
    # one epilogue shows after the last block, not one per block
    one, four = (us(model, cfg, Gemm(128 * w, 8192, n)) for w in (1, 4))
    assert four - one < 3 * (one - model.launch_s * 1e6) - epilogue_us
    # short K: the cube finishes each block before its epilogue, so the vector cores
    # bound the core: no faster than one epilogue per block it runs
    short = us(model, cfg, Gemm(128 * 4, 32, n))
    assert short >= 4 * epilogue_us


def test_streaming_is_bounded_per_active_core_and_by_hbm() -> None:
    """Fewer blocks than cores: each active core streams its own panels from HBM no
    faster than one core's stream of HBM lines, whatever the chip's HBM could give.
    Every core active: the kernel cannot move its compulsory bytes faster than HBM."""
    profile = load_profile("Ascend910B3")
    model = GemmModel(profile)
    cfg = {"tile_m": 32, "tile_n": 256, "l1_k": 256, "tile_k": 64, "preload": 1,
           "layout_b": "zN"}
    k = 16384
    few = Gemm(20, k, 256 * 4)  # 4 blocks on 20 cores, one B panel each
    per_core_bytes = (256 + 20) * k * 2.0
    line_s = transfer.STREAM_LINE_HBM_S + transfer.STREAM_RUN_HBM_S * 512 / (16 * 256 * 2)
    per_core_bytes_per_s = transfer.LINE_BYTES / line_s
    assert us(model, cfg, few) * 1e-6 >= per_core_bytes / per_core_bytes_per_s
    assert per_core_bytes / per_core_bytes_per_s > 4 * per_core_bytes / profile.hbm_bandwidth()
    full = Gemm(20, k, 6144)  # 24 blocks: every core streams
    assert us(model, cfg, full) * 1e-6 >= (20 + 6144) * k * 2.0 / profile.hbm_bandwidth()


def test_rows_that_end_inside_a_line_stream_slower() -> None:
    stream = transfer.gm_stream(256, 1.8e9)
    n = np.array([1 << 20] * 3, dtype=float)
    aligned, split, straddle = stream.seconds(
        n, np.array([512.0, 640.0, 512.0]), np.array([12288.0, 12288.0, 12290.0]),
        np.zeros(3))
    assert aligned < split and aligned < straddle
    assert transfer.lines_per_run(np.array([640.0]), np.array([1000.0]))[0] == pytest.approx(
        2 + 15 / 64)


def test_zn_weights_beat_row_major_when_memory_bound(model) -> None:
    gemm = Gemm(20, 16384, 6144)  # catlass's memory-bound M = 20 case
    tiles = {"tile_m": 32, "tile_n": 320, "tile_k": 32, "l1_k": 128, "preload": 1}
    zn = us(model, {**tiles, "layout_b": "zN"}, gemm)
    row = us(model, {**tiles, "layout_b": "row_major"}, gemm)
    assert 1.3 < row / zn < 2.2


def test_warm_l2_serves_a_gemm_timed_in_a_loop() -> None:
    profile = load_profile("Ascend910B2")
    gemm = Gemm(20, 4096, 4096)  # 32 MB of B: fits in L2
    cold = us(GemmModel(profile), {}, gemm)
    warm = us(GemmModel(profile, warm_l2=True), {}, gemm)
    assert warm < 0.8 * cold


def test_swizzle_decides_which_core_gets_the_edge_blocks() -> None:
    # catlass's swizzle case: 2 block rows (128 + 32) x 24 block columns on 20 cores
    bm, bn = np.array([2.0, 2.0]), np.array([24.0, 24.0])
    times = {(False, False): np.array([3.0, 3.0]), (True, False): np.array([1.0, 1.0]),
             (False, True): np.array([3.0, 3.0]), (True, True): np.array([1.0, 1.0])}
    busiest = schedule.slowest_core_s(times, bm, bn, np.ones(2), np.array([True, True]),
                                      np.array([False, False]), np.array([3.0, 4.0]),
                                      np.array([1, 1]), 20)
    assert busiest.tolist() == [3 + 3 + 1, 3 + 3]  # <3,1>: 128+128+32; <4,1>: 128+128
    rows, cols = schedule.block_coords(np.array([1.0, 21.0, 41.0]), 2.0, 24.0, 3.0, 1)
    assert rows.tolist() == [0, 0, 1] and cols.tolist() == [1, 9, 20]


def test_example_52_runs_its_own_split_count_with_the_unit_flag() -> None:
    """Example 52's split-K kernel (QuantMultiCoreSplitkMatmulTla) splits K as many
    times as the 20 cores hold copies of the MN grid, capped by K's L1 tiles, and
    runs MmadPingpong with the unit flag on; its records must say so."""
    l1 = (128, 256, 512)
    assert [catlass_multicore_split(128, 256, k, 20, l1)
            for k in (1024, 2048, 4096, 8192, 16384)] == [2, 4, 8, 16, 20]
    assert catlass_multicore_split(256, 512, 16384, 20, l1) == 5
    assert catlass_multicore_split(256, 1024, 16384, 20, l1) == 2
    assert catlass_multicore_split(4096, 4096, 1024, 20, l1) == 2  # more blocks than cores: 2
    split_k = [f for f in PUBLISHED if f.name.endswith(", split-K")]
    assert split_k and all(f.config["unit_flag"] == 1 for f in split_k)
    assert {f.config["split_k"] for f in split_k} == {2, 4, 8, 16, 20, 5}
