"""The simulator's model of the MoE gating kernel: no tiling beats the floor, CANN's
tiling is timed, a row read in pieces costs its second read, double buffering pays
when a core walks many tiles, and an infeasible tiling is refused in one line."""

from __future__ import annotations

import pytest

from aoe_optuna.aicore.vector.moe_gating import (
    best_gating_config,
    default_gating_cost,
    floor_s,
    gating_cost,
    gating_seconds,
)
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.moe_gating import MoeGating, gating_space

PROFILE = load_profile("Ascend910B2")


@pytest.mark.parametrize("rows", [1, 16, 4096])
def test_floor_best_default_in_order(rows: int) -> None:
    p = MoeGating(rows, 128, 8)
    space = gating_space(PROFILE, p)
    every = gating_seconds(PROFILE, p, space.columns(space.all_feasible()))["total"]
    _, best = best_gating_config(PROFILE, p)
    default = default_gating_cost(PROFILE, p)
    assert floor_s(PROFILE, p) < best.total_s == pytest.approx(float(every.min()))
    assert best.total_s <= default.total_s
    assert default.roofline_s == p.roofline_s(PROFILE) < floor_s(PROFILE, p)


def test_cann_leaves_time_in_prefill_where_its_full_ub_pass_fills_the_pipe_slowly() -> None:
    p = MoeGating(4096, 128, 8)
    best_config, best = best_gating_config(PROFILE, p)
    default = default_gating_cost(PROFILE, p)
    assert best_config["tile_rows"] < 43 and best.total_s < 0.99 * default.total_s


def test_a_row_in_pieces_is_read_twice_and_buffering_overlaps_copies() -> None:
    p = MoeGating(4096, 256, 8)
    whole = gating_cost(PROFILE, p, {"tile_rows": 8, "col_tile": 256, "cores": 48,
                                     "double_buffer": 1})
    pieces = gating_cost(PROFILE, p, {"tile_rows": 8, "col_tile": 64, "cores": 48,
                                      "double_buffer": 1})
    single = gating_cost(PROFILE, p, {"tile_rows": 8, "col_tile": 256, "cores": 48,
                                      "double_buffer": 0})
    assert pieces.copy_s > whole.copy_s and pieces.total_s > whole.total_s
    assert single.total_s > whole.total_s


def test_an_infeasible_tiling_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^moe_gating 4x128 top8 .*gating_share: cores "
                                         r"over the rows") as err:
        gating_cost(PROFILE, MoeGating(4, 128, 8), {"tile_rows": 1, "col_tile": 128,
                                                    "cores": 8, "double_buffer": 1})
    assert "\n" not in str(err.value)
