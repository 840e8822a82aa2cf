"""The vector-core model: bandwidth bound at scale, double buffering, fusion, long rows,
and an exhaustive best that never loses to the default."""

from __future__ import annotations

import dataclasses

import pytest

from aoe_optuna.backends.simulator.backend import KERNEL_LAUNCH_S
from aoe_optuna.backends.simulator.vector_ops import (
    best_vector_config,
    default_vector_cost,
    instructions_per_element,
    row_overhead_cycles,
    vector_op_cost,
    vector_op_seconds,
)
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.vector_ops import VectorOp
from aoe_optuna.workload.vector_space import vector_space

PROFILE = load_profile("Ascend910B2")
PREFILL_SWIGLU = VectorOp("swiglu", 4096, 18944)


def test_a_large_swiglu_is_hbm_bound_near_its_roofline() -> None:
    _, cost = default_vector_cost(PROFILE, PREFILL_SWIGLU)
    assert cost.copy_s > cost.compute_s
    assert cost.roofline_s < cost.total_s < 1.1 * cost.roofline_s + KERNEL_LAUNCH_S


def test_double_buffering_hides_compute_behind_copies() -> None:
    config = {"tile_len": 2048, "cores": 48, "double_buffer": 0}
    single = vector_op_cost(PROFILE, PREFILL_SWIGLU, config)
    double = vector_op_cost(PROFILE, PREFILL_SWIGLU, {**config, "double_buffer": 1})
    assert double.total_s < single.total_s - 0.5 * single.compute_s


def test_the_fused_add_rmsnorm_beats_an_add_then_a_norm_everywhere() -> None:
    op = VectorOp("add_rmsnorm", 256, 4096)
    space = vector_space(PROFILE, op)
    idx = space.all_feasible()
    cols = space.columns(idx)
    seconds = vector_op_seconds(PROFILE, op, cols)["total"]
    for row, config in enumerate(space.configs(idx)):
        if config["fused"] == 0:
            fused = space.index({**config, "fused": 1})
            j = next(i for i, r in enumerate(idx) if (r == fused).all())
            assert seconds[j] < seconds[row], config


def test_a_norm_row_longer_than_the_tile_is_read_twice() -> None:
    op = VectorOp("rmsnorm", 1024, 8192)
    whole = vector_op_cost(PROFILE, op, {"tile_len": 8192, "cores": 48, "double_buffer": 1})
    halves = vector_op_cost(PROFILE, op, {"tile_len": 4096, "cores": 48, "double_buffer": 1})
    assert halves.copy_s > 1.4 * whole.copy_s


def test_fewer_busy_cores_take_longer_when_the_work_is_shared() -> None:
    op = VectorOp("rmsnorm", 4096, 3584)
    costs = [vector_op_cost(PROFILE, op, {"tile_len": 4096, "cores": c, "double_buffer": 1})
             for c in (1, 4, 16, 48)]
    totals = [c.total_s for c in costs]
    assert totals == sorted(totals, reverse=True)


@pytest.mark.parametrize("op", [VectorOp("add_rmsnorm", 64, 3584), VectorOp("rope", 64, 4096),
                                VectorOp("swiglu", 64, 18944), VectorOp("rmsnorm", 1, 3584)],
                         ids=lambda op: op.label)
def test_the_exhaustive_best_is_feasible_and_never_slower_than_the_default(
        op: VectorOp) -> None:
    best, best_cost = best_vector_config(PROFILE, op)
    _, default = default_vector_cost(PROFILE, op)
    assert not vector_space(PROFILE, op).explain(best)
    assert best_cost.total_s <= default.total_s
    assert best_cost.total_s >= best_cost.roofline_s


def test_an_infeasible_config_is_never_costed() -> None:
    op = VectorOp("add_rmsnorm", 64, 3584)
    with pytest.raises(ValueError, match="UB: needs"):
        vector_op_cost(PROFILE, op, {"tile_len": 16384, "cores": 16, "double_buffer": 1,
                                     "fused": 1})
    with pytest.raises(ValueError, match="cores_units"):
        vector_op_cost(PROFILE, dataclasses.replace(op, rows=2),
                       {"tile_len": 1024, "cores": 4, "double_buffer": 1, "fused": 1})


def test_norms_pay_their_dtype_casts_and_a_cost_per_row() -> None:
    """ops-nn's RmsNorm computes in fp32 (fp16/bf16 cast x, gamma and y: 7 instructions
    per element against fp32's 4) and issues its instructions row by row, with a scalar
    rstd per row: many short rows cost far more than their bytes, long ones little."""
    assert instructions_per_element(VectorOp("rmsnorm", 8, 4096, "fp32")) == 4
    assert instructions_per_element(VectorOp("rmsnorm", 8, 4096, "bf16")) == 7
    assert instructions_per_element(VectorOp("add_rmsnorm", 8, 4096, "bf16")) == 13
    assert instructions_per_element(VectorOp("swiglu", 8, 4096, "fp32")) == 7
    assert row_overhead_cycles(VectorOp("rmsnorm", 1, 4096, "fp16")) > \
        row_overhead_cycles(VectorOp("rmsnorm", 1, 128, "fp16"))  # a deeper reduction tree
    qk_norm = VectorOp("rmsnorm", 114688, 128, "bf16")  # QK-norm rows: same bytes
    hidden = VectorOp("rmsnorm", 4096, 3584, "bf16")
    short = default_vector_cost(PROFILE, qk_norm)[1]
    long = default_vector_cost(PROFILE, hidden)[1]
    assert short.compute_s > 5 * short.copy_s  # bound by the rows, not the bytes
    assert long.compute_s < 1.5 * long.copy_s
