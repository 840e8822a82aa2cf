"""ReinforceSampler masks: exact against brute force, and fast enough on huge cores."""

from __future__ import annotations

import itertools

import numpy as np

from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.samplers.reinforce._masking import ChoiceMasker
from aoe_optuna.space.constraints import compile_expression
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace

TILES = [16, 32, 64, 128, 256]


def small_space() -> SearchSpace:
    """750 x 2 points; L0/L1 rules plus a user rule, output_align free."""
    params = [
        Param.known("tile_m", TILES), Param.known("tile_k", TILES), Param.known("tile_n", TILES),
        Param.known("pipeline", [0, 1, 2]), Param.known("output_align", [0, 1]),
        Param.known("l1_prefetch", [0, 1]),
    ]
    names = {p.name: None for p in params}
    user = compile_expression("tile_m * tile_n <= 16384", names)
    return SearchSpace(params, [*hardware_rules(load_profile("Ascend910B2"), "fp16"), user])


def brute(space: SearchSpace) -> np.ndarray:
    every = np.array(list(itertools.product(*(range(k) for k in space.shape))), dtype=np.int64)
    return every[space.is_feasible(every)]


def test_masks_and_counts_match_brute_force() -> None:
    space = small_space()
    feasible = brute(space)
    masker = ChoiceMasker(space)
    assert masker.exact
    rng = np.random.default_rng(0)
    # prefixes of feasible configs and of arbitrary (possibly dead-end) ones
    rows = np.vstack([feasible[rng.integers(len(feasible), size=40)],
                      np.stack([rng.integers(0, k, 40) for k in space.shape], axis=1)])
    for row in rows:
        for j in range(len(space.shape)):
            match = feasible[(feasible[:, :j] == row[:j]).all(axis=1)]
            want_counts = np.bincount(match[:, j], minlength=space.shape[j])
            if j in space.free and not len(match):
                continue  # a dead-end prefix: free params are unconstrained by definition
            np.testing.assert_array_equal(masker.feasible(row[:j], j), want_counts > 0)
            np.testing.assert_array_equal(masker.feasible_batch(row[None, :], j)[0],
                                          want_counts > 0)
            np.testing.assert_array_equal(masker.completions(row[:j], j), want_counts)


def test_allowed_excludes_exhausted_subtrees() -> None:
    space = small_space()
    feasible = brute(space)
    masker = ChoiceMasker(space)
    first = feasible[0]
    # every feasible config sharing the first two choices has been tried
    tried = feasible[(feasible[:, :2] == first[:2]).all(axis=1)]
    assert not masker.allowed(first[:1], 1, tried[tried[:, 0] == first[0]])[first[1]]
    assert masker.allowed(first[:1], 1, tried[:0])[first[1]]


def huge_space() -> SearchSpace:
    """A multi-op style space of 10^9 points whose core (10^8) is past the materialise limit."""
    params = [Param.generic(f"x{i}", range(1, 11)) for i in range(8)]
    params.append(Param.generic("unroll", [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]))
    names = {p.name: None for p in params}
    rules = [
        compile_expression("x0 * x1 <= 30", names, name="a"),
        compile_expression("x2 + x3 + x4 <= 18", names, name="b"),
        compile_expression("x5 * x6 * x7 <= 200", names, name="c"),
    ]
    return SearchSpace(params, rules)


def test_huge_space_masks_are_sound() -> None:
    space = huge_space()
    assert space.size >= 10**8 and not space.materialised
    masker = ChoiceMasker(space)
    assert not masker.exact and masker.completions([], 0) is None
    # x0 = 10 leaves x1 <= 3: the sampled mask must never allow x1 > 3
    mask = masker.feasible([9], 1)
    assert mask[:3].all() and not mask[3:].any()
