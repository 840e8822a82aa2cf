"""A config with one categorical choice changed: what a category does beside a good
tiling, which a random start cannot tell apart from the tilings it drew it with."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aoe_optuna.samplers.neighbourhood import categorical_flips
from aoe_optuna.spec.loader import load_spec, spec_from_dict

ROOT = Path(__file__).resolve().parents[2]
PREFILL = ROOT / "studies" / "qwen25_7b_prefill_catlass_910b2.json"


def test_each_other_feasible_choice_of_each_category_and_nothing_else_changes():
    space = spec_from_dict({
        "op_name": "GemmKernel",
        "search_space": {"tile_m": [16, 32], "tile_n": [128, 256],
                         "opt_level": ["O1", "O2", "O3"],
                         "layout": ["row_major", "col_major", "z_major"]},
        "hardware": {"soc": "Ascend910B2"},
        "workload": {"gemm": {"M": 64, "K": 64, "N": 256, "dtype": "fp16"}},
        "backend": {"name": "simulator"}}, source="test").space
    centre = space.index({"tile_m": 32, "tile_n": 256, "opt_level": "O2",
                          "layout": "row_major"})
    col = space.index({"tile_m": 32, "tile_n": 256, "opt_level": "O2", "layout": "col_major"})
    assert not space.is_feasible(col[None, :])[0]  # this space's rule, so never proposed
    got = [space.config(r) for r in categorical_flips(space, centre)]
    # an ordered choice (the optimisation level) is a step, not a category: kept
    assert got == [{"tile_m": 32, "tile_n": 256, "opt_level": "O2", "layout": "z_major"}]


def test_the_catlass_baseline_flips_to_zn_weights_and_stays_feasible():
    spec = load_spec(str(PREFILL))
    space = spec.space
    base = space.index(spec.baseline)
    flips = categorical_flips(space, base)
    assert len(flips) == 1 and space.is_feasible(flips).all()
    changed = np.flatnonzero(flips[0] != base)
    assert [space.names[j] for j in changed] == ["layout_b"]
    assert space.config(flips[0])["layout_b"] == "zN"


def test_a_space_of_ordered_parameters_only_has_no_flips():
    space = spec_from_dict({
        "op_name": "TinyGemm",
        "search_space": {"tile_m": [16, 32, 64, 128], "tile_n": [128, 256]},
        "hardware": {"soc": "Ascend910B2"},
        "workload": {"gemm": {"M": 64, "K": 64, "N": 256, "dtype": "fp16"}},
        "backend": {"name": "simulator"}}, source="test").space
    assert categorical_flips(space, space.index({"tile_m": 32, "tile_n": 128})).shape == (0, 2)
