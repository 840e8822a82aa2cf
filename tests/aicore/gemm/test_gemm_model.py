"""The GEMM model: its fitted parts, its physical properties and its calibration."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.aicore.gemm import geometry, pipeline, traffic
from aoe_optuna.aicore.pipes import cube, transfer
from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.space.params import KNOWN_PARAMS, Param, default_config
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Gemm
from aoe_optuna.workload.models import model_workload

TILES = list(range(16, 257, 16))
PUBLISHED_TFLOPS = {2048: 251.0, 4096: 314.5, 8192: 305.5}  # torch_npu on 910B2 (reference)


def seed_space(profile, dtype="fp16", extra=()):
    params = [Param.known("tile_m", TILES), Param.known("tile_k", TILES),
              Param.known("tile_n", TILES), Param.known("pipeline", [0, 1, 2]),
              Param.known("l1_prefetch", [0, 1]), Param.known("output_align", [0, 1]),
              *extra]
    return SearchSpace(params, hardware_rules(profile, dtype))


@pytest.fixture(scope="module")
def space(profile):
    return seed_space(profile)


@pytest.fixture(scope="module")
def feasible(space):
    return space.all_feasible()


def one(config):
    """Columns of one full config."""
    from aoe_optuna.space.params import to_code
    full = {**default_config(), **config}
    return {k: np.array([to_code(k, v)]) for k, v in full.items()}


# ------------------------------------------------------------------ fitted parts
def test_mmad_fit_reproduces_the_measured_tables():
    for table in ("MMAD_910B1", "MMAD_910B3"):
        slope, startup = cube.fit_mmad(table)
        assert slope == pytest.approx(1.0, abs=0.01)  # one fractal per cycle at peak
        rows = np.array(getattr(cube.measured_core, table))
        m, k, n, ops = rows.T
        f = cube.fractals(m, k, n, np.full_like(k, 16.0))
        predicted_ops = 2 * m * k * n / (slope * f + startup)
        residual = np.abs(predicted_ops / ops - 1)
        assert np.max(residual) < 0.17 and np.median(residual) < 0.03
    assert cube.mmad_startup_cycles("Ascend910B2") < cube.mmad_startup_cycles("Ascend910B3")


def test_mmad_efficiency_falls_for_short_runs():
    big = cube.mmad_cycles(np.array(128.), np.array(64.), np.array(256.), np.array(16.), 23.0)
    short = cube.mmad_cycles(np.array(16.), np.array(16.), np.array(16.), np.array(16.), 23.0)
    assert 512 / big > 0.95 and 1 / short < 0.1


def test_movers_charge_a_start_up_cost():
    gm = transfer.gm_to_l1()
    assert 300e-9 < gm.startup_s < 600e-9  # HBM latency scale, from the 1-burst row
    assert 250e9 < gm.bytes_per_s < 320e9
    small, large = 4096, 1 << 20
    assert small / gm.cycles(small, 1.8e9) < 0.05 * large / gm.cycles(large, 1.8e9)
    for fit, peak in ((transfer.l1_to_l0a(), 256), (transfer.l1_to_l0b(), 128)):
        assert 0.8 * peak < fit.bytes_per_s / 1.8e9 <= 1.0 * peak
        assert fit.startup_s > 0


def test_geometry_waves_and_idle_cores():
    g = geometry.block_geometry(np.array([128.0, 128.0]), np.array([64.0, 64.0]),
                                np.array([256.0, 256.0]), np.array([256.0, 256.0]), 1,
                                128 * 4, 4096, 256 * 6, 24)
    assert g.blocks.tolist() == [24, 24] and g.waves.tolist() == [1, 1]
    g = geometry.block_geometry(np.array([128.0]), np.array([48.0]), np.array([256.0]),
                                np.array([192.0]), 1, 128 * 5, 100, 256 * 5, 24)
    assert g.blocks[0] == 25 and g.waves[0] == 2 and g.active_last[0] == 1
    assert g.l1_tiles[0] == 1 and g.k_steps[0] == 3  # K = 100 in one L1 tile, 3 steps of 48
    decode = geometry.block_geometry(np.array([64.0]), np.array([64.0]), np.array([64.0]),
                                     np.array([256.0]), 1, 1, 3584, 4608, 24)
    assert decode.rows_valid[0] == 1 and decode.rows_cube[0] == 16 and decode.blocks[0] == 72


def test_split_k_multiplies_blocks_and_shares_k():
    g = geometry.block_geometry(np.array([128.0] * 3), np.array([64.0] * 3),
                                np.array([256.0] * 3), np.array([256.0] * 3),
                                np.array([1, 4, 64]), 128, 8192, 256, 24)
    assert g.blocks.tolist() == [1, 4, 32]  # 64 splits capped at the 32 L1 tiles of K
    assert g.l1_tiles.tolist() == [32, 8, 1]


def test_sector_inflation():
    assert traffic.sector_inflation(np.array([32.0]))[0] == pytest.approx(4.0)
    assert traffic.sector_inflation(np.array([512.0]))[0] == pytest.approx(1.0)
    assert 1.0 < traffic.sector_inflation(np.array([416.0]))[0] < 1.5


def test_pipelining_never_slows_a_stage():
    rng = np.random.default_rng(0)
    steps = np.full(200, 4.0)
    mte1, mmad, load, lat = (rng.uniform(10, 2000, 200) for _ in range(4))
    zeros = np.zeros(200)
    periods = {}
    for p in (0, 1, 2):
        for pf in (0, 1):
            pipe = np.full(200, p)
            compute = pipeline.stage_compute_cycles(pipe, steps, mte1, mmad, zeros, zeros)
            periods[p, pf] = pipeline.stage_period_cycles(pipe, np.full(200, pf), steps, lat,
                                                          load, compute)
    assert np.all(periods[1, 0] <= periods[0, 0]) and np.all(periods[2, 0] <= periods[1, 0])
    assert np.all(periods[2, 1] <= periods[2, 0]) and np.all(periods[1, 1] <= periods[1, 0])
    assert np.all(periods[2, 1] >= np.maximum(load, steps * np.maximum(mte1, mmad)) - 1e-9)


# ------------------------------------------------------------ physical properties
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (1, 3584, 4608), (7, 18944, 3584),
                                   (300, 1000, 50), (1024, 64, 8192), (16384, 3584, 512)])
def test_no_config_beats_the_roofline(profile, model, space, feasible, shape):
    gemm = Gemm(*shape)
    lat = model.latency(space.columns(feasible), gemm)
    assert np.all(np.isfinite(lat))
    assert np.min(lat) >= gemm.roofline_s(profile)


def test_int8_configs_respect_the_int8_roofline(profile, model):
    # B stored [N, K] (a Linear layer's weight): int8 rows along K stay 512 B runs
    k_major = [Param.known("l1_k", [0, 512]), Param.known("layout_b", ["col_major"])]
    gemm = Gemm(2048, 4096, 2048)
    best = {}
    for quant in (False, True):
        space = seed_space(profile, extra=[Param.known("quantization", [quant]), *k_major])
        best[quant] = np.nanmin(model.latency(space.columns(space.all_feasible()), gemm))
    int8_floor = max(gemm.flops / profile.peak_flops("int8"),
                     (gemm.M * gemm.K + gemm.K * gemm.N) / profile.hbm_bandwidth())
    assert best[True] >= int8_floor
    assert best[True] < 0.8 * best[False]  # the faster cube, despite the dequant epilogue


def test_infeasible_configs_never_get_a_latency(profile, model, space):
    every = np.stack(np.unravel_index(np.arange(space.size), space.shape), axis=1)
    lat = model.latency(space.columns(every), Gemm(512, 512, 512))
    assert np.array_equal(np.isnan(lat), ~space.is_feasible(every))
    assert 0 < np.isnan(lat).sum() < space.size


@pytest.mark.parametrize("size", sorted(PUBLISHED_TFLOPS))
def test_best_square_gemm_lands_near_torch_npu(model, space, feasible, size):
    gemm = Gemm(size, size, size)
    best = np.min(model.latency(space.columns(feasible), gemm))
    tflops = gemm.flops / best / 1e12
    assert 0.8 * PUBLISHED_TFLOPS[size] <= tflops <= 1.2 * PUBLISHED_TFLOPS[size]


def test_small_square_gemm_is_clearly_less_efficient(profile, model, space, feasible):
    cols = space.columns(feasible)
    eff = {}
    for size in (1024, 4096):
        gemm = Gemm(size, size, size)
        eff[size] = gemm.flops / np.min(model.latency(cols, gemm)) / profile.peak_flops("fp16")
    assert eff[1024] < 0.5 * eff[4096]


def test_huawei_recommended_block_is_in_the_top_5_percent(model, space, feasible):
    gemm = Gemm(4096, 4096, 4096)
    lat = model.latency(space.columns(feasible), gemm)
    recommended = {"tile_m": 128, "tile_k": 64, "tile_n": 256, "pipeline": 2,
                   "l1_prefetch": 1, "output_align": 1}
    mine = model.latency(space.columns(space.index(recommended)[None, :]), gemm)[0]
    assert np.mean(lat < mine) < 0.05


def _best_tile_n(lat, configs, **fixed):
    sel = np.ones(len(lat), dtype=bool)
    for name, value in fixed.items():
        sel &= configs[name] == value
    return int(configs["tile_n"][sel][np.argmin(lat[sel])])


def test_parameters_interact(model, space, feasible):
    cols = space.columns(feasible)
    square = model.latency(cols, Gemm(4096, 4096, 4096))
    by_tile_m = {tm: _best_tile_n(square, cols, tile_m=tm) for tm in (32, 128, 256)}
    assert len(set(by_tile_m.values())) > 1, by_tile_m
    # the layout decides what tile width streams well on a memory-bound decode GEMM
    decode = Gemm(1, 3584, 4608)
    by_layout = {}
    for code in (0, 1):  # B row-major (runs of tile_n) or column-major (runs along K)
        cols_b = {**cols, "layout_b": np.full(len(feasible), code)}
        by_layout[code] = _best_tile_n(model.latency(cols_b, decode), cols_b)
    assert by_layout[0] != by_layout[1], by_layout


def test_the_cube_computes_valid_rows_rounded_to_its_fractal(model):
    gemm = Gemm(1, 3584, 4608)  # decode: one row in a 16-row fractal whatever tile_m is
    thin = model.latency(one({"tile_m": 16, "tile_n": 128}), gemm)[0]
    tall = model.latency(one({"tile_m": 128, "tile_n": 128}), gemm)[0]
    assert thin == pytest.approx(tall, rel=1e-9)
    # an edge block of 2 rows costs a 16-row MMAD (it still streams its whole B panel)
    # (swizzle <1, 0>: every core runs one block of each block row)
    rows = {"tile_m": 128, "swizzle_offset": 1}
    one_row = model.latency(one(rows), Gemm(128, 4096, 256 * 24))[0]
    spill = model.latency(one(rows), Gemm(130, 4096, 256 * 24))[0]
    full = model.latency(one(rows), Gemm(256, 4096, 256 * 24))[0]
    assert spill - one_row < 0.75 * (full - one_row)


def test_idle_cores_of_the_last_wave_cost_time(model):
    full = model.latency(one({}), Gemm(128 * 4, 4096, 256 * 6))[0]  # 24 blocks: one wave
    spill = model.latency(one({}), Gemm(128 * 5, 4096, 256 * 5))[0]  # 25 blocks: two waves
    assert spill - model.launch_s > 1.6 * (full - model.launch_s)


def test_compile_options_matter_a_few_percent(model):
    gemm = Gemm(4096, 4096, 4096)
    base = model.latency(one({}), gemm)[0]
    variants = [model.latency(one({name: value}), gemm)[0]
                for name, value in [("opt_level", "O0"), ("opt_level", "O3"),
                                    ("schedule", "throughput"), ("schedule", "latency"),
                                    ("unroll_factor", 8)]]
    ratios = np.array(variants) / base
    assert np.all(np.abs(ratios - 1) < 0.15) and np.any(np.abs(ratios - 1) > 0.001)
    assert model.latency(one({"opt_level": "O0"}), gemm)[0] > base


def test_layout_conversion_costs(model):
    gemm = Gemm(1, 3584, 4608)
    small_n = {"tile_m": 16, "tile_n": 32}
    row = model.latency(one({**small_n, "layout": "row_major"}), gemm)[0]
    z = model.latency(one({**small_n, "layout": "z_major"}), gemm)[0]
    assert z < row


def test_decode_landscape_is_not_a_plateau(profile, model, space, feasible):
    cols = space.columns(feasible)
    wl = model_workload(profile, "qwen2.5-7b", "decode", batch=1)
    step = wl.fixed_s + sum(g.count * model.latency(cols, g) for g in wl.gemms)
    tok = wl.tokens_per_step / step
    near = int(np.sum(tok >= 0.99 * tok.max()))
    assert 1 <= near <= 0.02 * len(tok)
    assert tok.max() <= wl.roofline_tokens_per_s(profile)
    assert tok.max() > 1.5 * np.median(tok)


def test_missing_columns_take_their_defaults(model):
    gemm = Gemm(1024, 1024, 1024)
    lat = model.latency({"tile_m": np.array([64, 128])}, gemm)
    full = [model.latency(one({"tile_m": tm}), gemm)[0] for tm in (64, 128)]
    assert set(one({})) == set(KNOWN_PARAMS)
    assert lat.tolist() == pytest.approx(full)


def test_a_lone_l1_tile_waits_for_its_load_once():
    """K in one L1 tile, load-bound, two L1 stages, ping-pong: a block costs the tile's
    latency and load once (its compute hides under the rest of the load), and the next
    block's first load runs while this block's FixPipe drains."""
    def a(x):
        return np.array([float(x)])

    lat, load, compute, steps, fix, ping_pong = a(800), a(1000), a(100), a(4), a(50), a(0) > 0
    period = pipeline.stage_period_cycles(a(2), a(1), steps, lat, load, compute)
    block, first = pipeline.block_tiles_cycles(a(2), a(1), ping_pong, a(1), steps, lat, load,
                                               compute, period, fix)
    assert block[0] == pytest.approx(800 + 1000)
    assert first[0] == pytest.approx(50)  # once per core: the last write-back alone
    # without two L1 stages each stage period already waits for its own load
    serial = pipeline.stage_period_cycles(a(0), a(0), steps, lat, load, compute)
    block, first = pipeline.block_tiles_cycles(a(0), a(0), ping_pong, a(1), steps, lat, load,
                                               compute, serial, fix)
    assert (block[0], first[0]) == (pytest.approx(800 + 1000 + 100 + 50), 0.0)


@pytest.mark.parametrize("serial_preload", [0, 1])
def test_double_buffering_never_loses_to_no_overlap_on_short_k(model, serial_preload):
    """A short-K GEMM (K = one L1 tile), 16 blocks per core, load-bound: the double-buffered
    ping-pong kernel is never slower than one that runs load, compute and write-back
    one after another."""
    gemm = Gemm(16, 256, 16 * 24 * 128)
    tiles = {"tile_m": 16, "tile_n": 128, "tile_k": 128, "l1_k": 256, "preload": 0}
    overlapped = model.latency(one({**tiles, "pipeline": 2, "l1_prefetch": 1}), gemm)[0]
    serial = model.latency(one({**tiles, "pipeline": 0, "l1_prefetch": 0,
                                   "preload": serial_preload}), gemm)[0]
    assert overlapped < serial
