"""GEMM problems and the Qwen2.5-7B workload: shapes, tensor parallelism, tokens/s, roofline."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.backends.simulator.backend import AscendSimulator
from aoe_optuna.hardware.profile import DTYPE_BYTES, load_profile
from aoe_optuna.space.params import default_config, to_code
from aoe_optuna.workload.gemm import Gemm, single_gemm
from aoe_optuna.workload.models import QWEN25_7B, model_workload


@pytest.fixture(scope="module")
def profile():
    return load_profile("Ascend910B2")


def shapes(wl):
    return {g.name: (g.M, g.K, g.N, g.count) for g in wl.gemms}


def test_qwen_decode_gemms(profile):
    wl = model_workload(profile, "qwen2.5-7b", "decode", batch=1)
    assert shapes(wl) == {
        "qkv_proj": (1, 3584, 4608, 28),
        "o_proj": (1, 3584, 3584, 28),
        "gate_up_proj": (1, 3584, 37888, 28),
        "down_proj": (1, 18944, 3584, 28),
        "lm_head": (1, 3584, 152064, 1),
    }
    assert wl.tokens_per_step == 1 and wl.details["comm_s"] == 0.0
    params = sum(g.count * g.K * g.N for g in wl.gemms)
    assert 7.0e9 < params < 7.15e9  # Qwen2.5-7B without its embedding table and norms


def test_prefill_multiplies_m_by_the_sequence(profile):
    wl = model_workload(profile, "qwen2.5-7b", "prefill", batch=2, seq_len=512)
    rows = {g.name: g.M for g in wl.gemms}
    assert rows.pop("lm_head") == 2  # logits for the last token of each sequence
    assert set(rows.values()) == {1024} and wl.tokens_per_step == 1024


def test_tensor_parallel_splits_n_of_column_and_k_of_row_parallel_gemms(profile):
    one = shapes(model_workload(profile, tp=1))
    two = shapes(model_workload(profile, tp=2))
    for name in ("qkv_proj", "gate_up_proj", "lm_head"):
        assert two[name][2] * 2 == one[name][2] and two[name][1] == one[name][1]
    for name in ("o_proj", "down_proj"):
        assert two[name][1] * 2 == one[name][1] and two[name][2] == one[name][2]
    wl = model_workload(profile, tp=4)
    per_allreduce = 2 * 3 / 4 * 1 * QWEN25_7B["hidden"] * 2 / (profile.interconnect_gbs * 1e9)
    expected = 2 * 28 * (per_allreduce + profile.interconnect_latency_us * 1e-6)
    assert wl.details["comm_s"] == pytest.approx(expected)


@pytest.mark.parametrize("tp", [3, 5, 0])
def test_tp_that_does_not_divide_the_model_is_refused(profile, tp):
    with pytest.raises(ValueError, match="^tp: "):
        model_workload(profile, tp=tp)


@pytest.mark.parametrize(("kwargs", "key"), [({"model": "llama"}, "model"),
                                             ({"phase": "train"}, "phase")])
def test_bad_workload_names_the_key(profile, kwargs, key):
    with pytest.raises(ValueError, match=f"^{key}: expected"):
        model_workload(profile, **kwargs)


@pytest.mark.parametrize(("kwargs", "key"), [({"M": 0}, "M"), ({"K": True}, "K"),
                                             ({"N": 2.5}, "N"), ({"dtype": "fp8"}, "dtype"),
                                             ({"batch": 0}, "batch")])
def test_bad_gemm_names_the_key(kwargs, key):
    dims = {"M": 16, "K": 16, "N": 16, **kwargs}
    with pytest.raises(ValueError, match=f"^{key}: expected"):
        Gemm(**dims)


def test_gemm_flops_bytes_and_roofline(profile):
    g = Gemm(1, 3584, 4608)
    assert g.flops == 2 * 3584 * 4608
    assert g.min_bytes == (3584 + 3584 * 4608 + 4608) * DTYPE_BYTES["fp16"]
    assert g.roofline_s(profile) == pytest.approx(g.min_bytes / profile.hbm_bandwidth())
    big = Gemm(8192, 8192, 8192)
    assert big.roofline_s(profile) == pytest.approx(big.flops / profile.peak_flops("fp16"))


def test_a_batched_gemm_counts_every_matrix_and_keys_its_batch(profile):
    one, batched = Gemm(2, 128, 512), Gemm(2, 128, 512, batch=16)
    assert one.key == (2, 128, 512, "fp16")  # a single GEMM keeps the key it always had
    assert batched.key == (2, 128, 512, "fp16", 16)
    assert batched.flops == 16 * one.flops and batched.min_bytes == 16 * one.min_bytes
    assert batched.roofline_s(profile) == pytest.approx(16 * one.roofline_s(profile))
    assert single_gemm(batched).name == "gemm 2x128x512 batch=16 fp16"


def test_tokens_per_s_is_tokens_over_step_time(profile):
    wl = model_workload(profile, "qwen2.5-7b", "decode", batch=4)
    latencies = {g.name: 1e-4 * (i + 1) for i, g in enumerate(wl.gemms)}
    step = wl.fixed_s + sum(g.count * latencies[g.name] for g in wl.gemms)
    assert wl.step_time(latencies) == pytest.approx(step)
    assert wl.tokens_per_s(latencies) == pytest.approx(4 / step)
    single = single_gemm(Gemm(256, 1024, 1024))
    assert single.tokens_per_s({"gemm": 0.002}) == pytest.approx(256 / 0.002)


def test_decode_roofline_is_the_weight_read(profile):
    wl = model_workload(profile, "qwen2.5-7b", "decode", batch=1)
    weights = sum(g.count * g.K * g.N for g in wl.gemms) * 2
    gemm_floor = sum(g.count * g.roofline_s(profile) for g in wl.gemms)
    assert gemm_floor == pytest.approx(weights / profile.hbm_bandwidth(), rel=0.01)
    assert wl.roofline_tokens_per_s(profile) == pytest.approx(1 / (gemm_floor + wl.fixed_s))
    assert 100 < wl.roofline_tokens_per_s(profile) < 120  # ~14 GB of weights at 1.6 TB/s


@pytest.mark.parametrize(("phase", "batch", "tp"), [("decode", 1, 1), ("decode", 8, 2),
                                                     ("prefill", 1, 1)])
def test_simulated_tokens_per_s_stay_under_the_roofline(profile, phase, batch, tp):
    sim = AscendSimulator(profile)
    wl = model_workload(profile, "qwen2.5-7b", phase, batch=batch, seq_len=256, tp=tp)
    configs = [default_config(), {**default_config(), "tile_m": 16, "tile_n": 208},
               {**default_config(), "tile_m": 64, "tile_k": 128, "tile_n": 64, "pipeline": 1}]
    cols = {k: np.array([to_code(k, c[k]) for c in configs]) for k in configs[0]}
    step = wl.fixed_s + sum(g.count * sim.latency(cols, g) for g in wl.gemms)
    tokens = wl.tokens_per_step / step
    assert np.all(np.isfinite(tokens))
    assert np.all(tokens <= wl.roofline_tokens_per_s(profile))
    assert tokens[0] > 0.3 * wl.roofline_tokens_per_s(profile)  # the recommended block
