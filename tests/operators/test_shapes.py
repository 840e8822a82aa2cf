"""Distinct shapes of a workload and the spec of each shape's study."""

import pytest

from aoe_optuna.operators.shapes import operator_shapes, shape_spec, step_latencies
from aoe_optuna.spec.loader import spec_from_dict
from aoe_optuna.workload.gemm import Gemm, Workload


def workload() -> Workload:
    return Workload("w", (
        Gemm(16, 3584, 4608, "fp16", "b16/qkv_proj", 28),
        Gemm(16, 3584, 3584, "fp16", "b16/o_proj", 28),
        Gemm(16, 3584, 4608, "fp16", "other/qkv_proj", 2),
        Gemm(16, 3584, 3584, "int8", "b16/o_proj_q", 1),
    ), tokens_per_step=16, fixed_s=1e-3)


def test_shapes_merge_gemms_of_one_shape_and_sum_their_runs():
    shapes = operator_shapes(workload())
    assert [s.key for s in shapes] == [(16, 3584, 4608, "fp16"), (16, 3584, 3584, "fp16"),
                                       (16, 3584, 3584, "int8")]
    assert shapes[0].names == ("b16/qkv_proj", "other/qkv_proj") and shapes[0].weight == 30
    assert shapes[0].label == "qkv_proj+1"
    assert shapes[0].study_name("run") == "run/qkv_proj+1/16x4608x3584"
    assert shapes[2].dims == "16x3584x3584-int8"


def test_step_latencies_give_every_gemm_its_shapes_latency():
    wl = workload()
    shapes = operator_shapes(wl)
    lat = step_latencies(wl, shapes, {s.key: (1e-5, 2e-5, 3e-5)[i] for i, s in enumerate(shapes)})
    assert lat == {"b16/qkv_proj": 1e-5, "other/qkv_proj": 1e-5, "b16/o_proj": 2e-5,
                   "b16/o_proj_q": 3e-5}
    assert wl.step_time(lat) == pytest.approx(1e-3 + 30e-5 + 28 * 2e-5 + 3e-5)


def test_shape_spec_is_the_same_study_on_one_gemm():
    spec = spec_from_dict({"search_space": {"tile_m": [16, 32], "tile_n": [64, 128],
                                            "tile_k": [64]},
                           "max_search_time": 100, "workload": {"batch": 16}})
    shape = operator_shapes(spec.workload)[0]
    one = shape_spec(spec, shape)
    assert [g.key for g in one.workload.gemms] == [shape.key]
    assert one.space.names == spec.space.names and one.backend == spec.backend
    assert one.max_search_time is None


def test_a_batched_gemm_is_its_own_shape_with_the_batch_in_key_name_and_spec():
    wl = Workload("mla", (Gemm(1, 128, 512, "fp16", "q_absorb", 27, batch=16),
                          Gemm(1, 128, 512, "fp16", "single", 1)), tokens_per_step=1)
    batched, single = operator_shapes(wl)
    assert batched.key == (1, 128, 512, "fp16", 16) and single.key == (1, 128, 512, "fp16")
    assert batched.weight == 27 and batched.gemm.batch == 16
    assert batched.dims == "1x512x128-b16" and single.dims == "1x512x128"
    assert batched.study_name("run") == "run/q_absorb/1x512x128-b16"
    spec = spec_from_dict({"search_space": {"tile_m": [16], "tile_n": [64], "tile_k": [64]},
                           "max_search_time": 100})
    one = shape_spec(spec, batched)
    assert [g.key for g in one.workload.gemms] == [batched.key]
    assert one.canonical()["workload"]["gemm"]["batch"] == 16
    assert "batch" not in shape_spec(spec, single).canonical()["workload"]["gemm"]
