"""Re-tiling a GEMM's output tile whole: the move from one shape's best tiling to the
next one's, where the tile fills L0C and no one-parameter step can make it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aoe_optuna.samplers.neighbourhood import neighbours, retilings
from aoe_optuna.spec.loader import load_spec

ROOT = Path(__file__).resolve().parents[2]
DECODE = ROOT / "studies" / "qwen25_7b_decode_catlass_910b2.json"


def test_both_sides_of_the_output_tile_change_and_the_rest_is_kept():
    spec = load_spec(str(DECODE))
    space = spec.space
    # batch 154's optimum of decode's gate_up_proj: an 80 x 400 fp32 tile, 125 KB of
    # L0C's 128
    centre = space.index({"tile_m": 80, "tile_n": 400, "tile_k": 32, "l1_k": 256,
                          "swizzle_offset": 4, "swizzle_direction": 1, "preload": 0,
                          "unit_flag": 1, "split_k": 1, "layout_b": "zN"})
    assert space.is_feasible(centre[None, :])[0]
    got = retilings(space, centre[None, :])
    assert len(got) and space.is_feasible(got).all()
    m, n = space.names.index("tile_m"), space.names.index("tile_n")
    rest = [j for j in range(len(space.names)) if j not in (m, n)]
    assert (got[:, m] != centre[m]).all() and (got[:, n] != centre[n]).all()
    assert (got[:, rest] == centre[rest]).all()
    # batch 178's 192 x 160 is one re-tiling away and no one-parameter step away
    target = space.index({**space.config(centre), "tile_m": 192, "tile_n": 160})
    ids = space.flat_id(got)
    assert space.flat_id(target[None, :])[0] in ids
    assert space.flat_id(target[None, :])[0] not in space.flat_id(
        neighbours(space, centre[None, :]))


def test_a_space_without_both_sides_has_no_retilings():
    space = load_spec(str(DECODE)).space
    rows = space.sample_feasible(2, np.random.default_rng(0))
    assert retilings(space, rows, ("tile_m", "tile_w")).shape == (0, len(space.names))
    assert retilings(space, rows[:0]).shape == (0, len(space.names))
