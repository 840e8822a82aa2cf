"""The 910B2 GEMM model and the seed space's feasible columns, shared by this folder's tests
(a module that defines fixtures of the same names keeps its own; ``profile`` is the
parent folder's)."""

from __future__ import annotations

import pytest

from aoe_optuna.aicore.gemm.model import GemmModel
from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace

TILES = list(range(16, 257, 16))


@pytest.fixture(scope="module")
def model(profile):
    return GemmModel(profile)


@pytest.fixture(scope="module")
def seed(profile):
    space = SearchSpace([Param.known("tile_m", TILES), Param.known("tile_k", TILES),
                         Param.known("tile_n", TILES), Param.known("pipeline", [0, 1, 2]),
                         Param.known("l1_prefetch", [0, 1]), Param.known("output_align", [0, 1])],
                        hardware_rules(profile, "fp16"))
    return space.columns(space.all_feasible())
