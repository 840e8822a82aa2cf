"""The simulator backend: what a measurement adds to the GEMM model's latency (noise,
cost, hidden failures, int8 accuracy), and its options. The model itself is
tests/aicore/gemm's."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.aicore.gemm.model import GemmModel
from aoe_optuna.backends.simulator import measurement_effects as measure
from aoe_optuna.backends.simulator.backend import AscendSimulator
from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import Param, default_config, to_code
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Gemm

TILES = list(range(16, 257, 16))


@pytest.fixture(scope="module")
def profile():
    return load_profile("Ascend910B2")


@pytest.fixture(scope="module")
def sim(profile):
    return AscendSimulator(profile)


@pytest.fixture(scope="module")
def space(profile):
    params = [Param.known("tile_m", TILES), Param.known("tile_k", TILES),
              Param.known("tile_n", TILES), Param.known("pipeline", [0, 1, 2]),
              Param.known("l1_prefetch", [0, 1]), Param.known("output_align", [0, 1])]
    return SearchSpace(params, hardware_rules(profile, "fp16"))


@pytest.fixture(scope="module")
def feasible(space):
    return space.all_feasible()


def one(config):
    """Columns of one full config."""
    full = {**default_config(), **config}
    return {k: np.array([to_code(k, v)]) for k, v in full.items()}


def test_an_infeasible_config_fails_naming_the_rules_it_breaks(sim):
    m = sim.measure({"tile_m": 256, "tile_k": 256, "tile_n": 256}, Gemm(512, 512, 512))
    assert not m.ok and m.failure_kind == "infeasible" and m.latency_s is None
    assert "L0A: needs 256 KiB, has 64 KiB" in m.reason and "L0C" in m.reason


def test_noise_is_deterministic_for_a_seed(profile):
    gemm = Gemm(2048, 2048, 2048)
    a = AscendSimulator(profile, noise=0.05, seed=3)
    b = AscendSimulator(profile, noise=0.05, seed=3)
    other = AscendSimulator(profile, noise=0.05, seed=4)
    cfgs = [{"tile_m": tm, "tile_n": 128} for tm in (32, 64, 128)]
    first = [a.measure(c, gemm).latency_s for c in cfgs]
    assert first == [b.measure(c, gemm).latency_s for c in cfgs]
    assert first == [a.measure(c, gemm).latency_s for c in cfgs]
    assert first != [other.measure(c, gemm).latency_s for c in cfgs]
    clean = [AscendSimulator(profile).measure(c, gemm).latency_s for c in cfgs]
    assert all(0.7 < x / y < 1.3 for x, y in zip(first, clean, strict=True))


def test_noise_has_the_requested_spread(profile):
    factors = [measure.noise_factor(0.02, 0, {"tile_m": i}, Gemm(64, 64, 64)) for i in range(400)]
    assert np.std(np.log(factors)) == pytest.approx(0.02, rel=0.2)


def test_measure_reports_cost_and_model_latency(profile):
    sim = AscendSimulator(profile, build_s=20.0, warmup=5, repeats=50)
    gemm = Gemm(4096, 4096, 4096)
    m = sim.measure(default_config(), gemm)
    assert m.ok and m.latency_s == pytest.approx(sim.latency(one({}), gemm)[0])
    assert m.cost_s == pytest.approx(20.0 + 55 * m.latency_s)
    assert "accuracy_loss" not in m.extra
    named = sim.measure({**default_config(), "pipeline": "double_buffer", "quantization": "false"},
                        gemm)
    assert named.latency_s == m.latency_s and "accuracy_loss" not in named.extra


def test_int8_accuracy_figure_matches_a_real_quantized_gemm(sim):
    rng = np.random.default_rng(0)
    k = 1024
    a, b = rng.standard_normal((64, k)), rng.standard_normal((k, 64))
    sa = np.abs(a).max(axis=1, keepdims=True) / 127
    sb = np.abs(b).max(axis=0, keepdims=True) / 127
    exact = a @ b
    quant = (np.round(a / sa) * sa) @ (np.round(b / sb) * sb)
    observed = np.sqrt(np.mean((quant - exact) ** 2) / np.mean(exact**2))
    m = sim.measure({"quantization": True}, Gemm(512, k, 512))
    assert m.ok and m.extra["accuracy_loss"] == pytest.approx(observed, rel=0.15)
    assert measure.int8_relative_error(18944) > measure.int8_relative_error(256)


def test_hidden_failures_are_a_learnable_region(profile, space, feasible):
    gemm = Gemm(4096, 4096, 4096)
    assert not AscendSimulator(profile).hidden_failures(space.columns(feasible), gemm).any()
    sim = AscendSimulator.from_options({"hidden_failures": True}, profile)
    cols = space.columns(feasible)
    fails = sim.hidden_failures(cols, gemm)
    assert 0.05 < fails.mean() < 0.7
    # monotone: a failing config still fails with a deeper K tile
    deeper = {**cols, "tile_k": cols["tile_k"] + 16}
    assert np.all(sim.hidden_failures(deeper, gemm)[fails])
    bad = space.config(feasible[np.argmax(fails)])
    m = sim.measure(bad, gemm)
    assert not m.ok and m.failure_kind == "build" and m.reason.startswith("GetTiling returned -1")
    assert sim.measure(default_config(), gemm).ok
    assert np.array_equal(np.isnan(sim.latency(cols, gemm)), fails)  # no latency either
    assert AscendSimulator.from_options({"hidden_failures": 256}, profile).hidden_failures(
        cols, gemm).mean() > fails.mean()


@pytest.mark.parametrize(("options", "key"), [
    ({"nois": 0.1}, "nois"), ({"noise": -1}, "noise"), ({"noise": "x"}, "noise"),
    ({"seed": 1.5}, "seed"), ({"hidden_failures": "yes"}, "hidden_failures"),
    ({"repeats": 0}, "repeats"),
])
def test_bad_options_name_the_key(profile, options, key):
    with pytest.raises(ValueError, match=rf"^{key}: expected"):
        AscendSimulator.from_options(options, profile)


def test_remeasure_draws_fresh_noise_and_draw_zero_is_the_first_timing(profile) -> None:
    gemm = Gemm(16, 3584, 4608)
    config = default_config()
    noisy = AscendSimulator.from_options({"noise": 0.02, "seed": 5}, profile)
    first = noisy.measure(config, gemm).latency_s
    assert noisy.remeasure(config, gemm, 0).latency_s == first
    again = [noisy.remeasure(config, gemm, d).latency_s for d in (1, 2, 3)]
    assert len({first, *again}) == 4
    assert again == [noisy.remeasure(config, gemm, d).latency_s for d in (1, 2, 3)]
    clean = AscendSimulator.from_options({}, profile)
    assert clean.remeasure(config, gemm, 7).latency_s == clean.measure(config, gemm).latency_s


def test_its_latency_is_the_gemm_models_with_the_options_passed_on(profile, space, feasible):
    cols = space.columns(feasible)
    for gemm in (Gemm(16, 3584, 4608), Gemm(4096, 4096, 4096)):
        assert np.array_equal(AscendSimulator(profile).latency(cols, gemm),
                              GemmModel(profile).latency(cols, gemm), equal_nan=True)
        options = {"launch_us": 20.0, "mmad_startup_cycles": 9.0, "warm_l2": True}
        model = GemmModel(profile, launch_s=20.0 * 1e-6, mmad_startup_cycles=9.0, warm_l2=True)
        assert np.array_equal(AscendSimulator.from_options(options, profile).latency(cols, gemm),
                              model.latency(cols, gemm), equal_nan=True)
