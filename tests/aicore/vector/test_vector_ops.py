"""The project's vector kernel model: bandwidth bound at scale, double buffering, fusion,
long rows, an exhaustive best that never loses to the default, and the same vector unit
and copy line as CANN's kernels."""

from __future__ import annotations

import dataclasses

import pytest

from aoe_optuna.aicore.cann import swiglu as cann_swiglu
from aoe_optuna.aicore.cann.library_vector import library_vector_seconds
from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.aicore.vector import kernel_steps as steps
from aoe_optuna.aicore.vector.vector_ops import (
    best_vector_config,
    default_vector_cost,
    floor_s,
    vector_op_cost,
    vector_op_seconds,
)
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.vector_ops import VectorOp
from aoe_optuna.workload.vector_space import vector_space

PROFILE = load_profile("Ascend910B2")
PREFILL_SWIGLU = VectorOp("swiglu", 4096, 18944)


def test_a_large_swiglu_is_hbm_bound_near_its_roofline() -> None:
    """Held to its chip floor: its reads from HBM, and of its 155 MB output only what
    the 466 MB stream evicts from the clean L2 written back, so under the roofline that
    charges every byte at HBM bandwidth."""
    _, cost = default_vector_cost(PROFILE, PREFILL_SWIGLU)
    assert cost.copy_s > cost.compute_s
    floor = floor_s(PROFILE, PREFILL_SWIGLU)
    assert floor <= cost.total_s < 1.1 * floor
    assert floor - KERNEL_LAUNCH_S < cost.roofline_s < 1.2 * (floor - KERNEL_LAUNCH_S)


def test_double_buffering_hides_compute_behind_copies() -> None:
    config = {"tile_len": 2048, "cores": 48, "double_buffer": 0}
    single = vector_op_cost(PROFILE, PREFILL_SWIGLU, config)
    double = vector_op_cost(PROFILE, PREFILL_SWIGLU, {**config, "double_buffer": 1})
    assert double.total_s < single.total_s - 0.5 * single.compute_s


def test_the_fused_add_rmsnorm_beats_an_add_then_a_norm_where_a_row_fits() -> None:
    """A row in a tile: one pass reads both inputs once. A row in pieces reads both
    again to scale it, one piece at a time, where the unfused add streams."""
    op = VectorOp("add_rmsnorm", 256, 4096)
    space = vector_space(PROFILE, op)
    idx = space.all_feasible()
    cols = space.columns(idx)
    seconds = vector_op_seconds(PROFILE, op, cols)["total"]
    for row, config in enumerate(space.configs(idx)):
        if config["fused"] == 0 and config["tile_len"] >= op.width:
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
    """The kernel computes in fp32 (fp16/bf16 cast x, gamma and y, fp32 does not) and
    walks a norm one row at a time, the scalar waiting on each row's sum and rstd:
    many short rows cost far more than their bytes, long ones little."""
    fp32 = vector_op_cost(PROFILE, VectorOp("rmsnorm", 48, 4096, "fp32"), ROW_CONFIG)
    bf16 = vector_op_cost(PROFILE, VectorOp("rmsnorm", 48, 4096, "bf16"), ROW_CONFIG)
    assert bf16.compute_s > 1.2 * fp32.compute_s
    qk_norm = VectorOp("rmsnorm", 114688, 128, "bf16")  # QK-norm rows: same bytes
    hidden = VectorOp("rmsnorm", 4096, 3584, "bf16")
    short = default_vector_cost(PROFILE, qk_norm)[1]
    long = default_vector_cost(PROFILE, hidden)[1]
    assert short.total_s > 5 * long.total_s
    assert short.compute_s > 5 * long.compute_s


ROW_CONFIG = {"tile_len": 4096, "cores": 48, "double_buffer": 1}


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])  # the kernel's InputT: half, bfloat16_t
def test_both_swiglu_kernels_pay_one_vector_unit(dtype: str) -> None:
    """The project's SwiGLU and CANN's (swi_glu_bf16.hpp) issue the same instructions a
    tile: on one vector unit's measured rates they cost the same cycles, whatever their
    tilings do."""
    for elements in (512, 4096, 12288):
        assert steps.swiglu_tile_cycles(dtype, elements) == pytest.approx(
            cann_swiglu._tile_cycles(elements, dtype))


def test_both_kernels_meet_at_the_hbm_floor_and_part_by_their_structure() -> None:
    """A prefill SwiGLU streams at HBM bandwidth in either kernel (one copy line, one
    HBM share); a prefill RMSNorm does not: CANN's MergeN/Normal passes overlap the
    next row's copy, where this kernel's scalar waits on every row's sum and rstd."""
    ours = best_vector_config(PROFILE, PREFILL_SWIGLU)[1].total_s
    assert ours == pytest.approx(library_vector_seconds(PROFILE, PREFILL_SWIGLU), rel=0.02)
    norm = VectorOp("rmsnorm", 4096, 3584)
    assert best_vector_config(PROFILE, norm)[1].total_s > 1.2 * library_vector_seconds(
        PROFILE, norm)


def test_the_reduce_sum_takes_a_level_per_64_fold() -> None:
    one = steps.reduce_sum_cycles(64)
    assert steps.reduce_sum_cycles(4096) > steps.reduce_sum_cycles(64 * 64) - 1e-9 > one
    assert steps.reduce_sum_cycles(4097) > steps.reduce_sum_cycles(4096)  # a third level
