"""Decode attention's tiling space as a SearchSpace: the samplers' view of it.

The parameters are :class:`AttentionTiling`'s fields; the one rule is
:func:`violations` itself (buffer capacities, tile nesting, page alignment,
the KV split's range), so a sampler sees exactly the tilings the model can
cost and an infeasible one is never measured. The rule is a lookup in the
feasible set, enumerated once per problem (at most a few ten thousand
tilings), which keeps it vectorised for the samplers' candidate scoring.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aoe_optuna.space.constraints import Columns
from aoe_optuna.space.decode_attention import (
    BLOCK_TILES,
    L0_TILES,
    L1_TILES,
    PIPELINES,
    AttentionTiling,
    DecodeAttention,
    violations,
)
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile

FIELDS = ("kv_split", "block_tile", "l1_tile", "l0_tile", "pipeline")


def max_kv_split(profile: SocProfile, shape: DecodeAttention) -> int:
    """Two parts per cube core at most, and no part without a page of its own."""
    return min(2 * profile.cube_cores, math.ceil(shape.context / shape.page_tokens))


def tiling_of(config: Mapping[str, Any]) -> AttentionTiling:
    return AttentionTiling(*(int(config[f]) for f in FIELDS))


def config_of(tiling: AttentionTiling) -> dict[str, int]:
    return {f: int(getattr(tiling, f)) for f in FIELDS}


class _TilingRule:
    """Every rule of :func:`violations`, as one: 0 for a feasible tiling, else the number
    of rules it breaks."""

    name = "attention_tiling"
    variables = frozenset(FIELDS)

    def __init__(self, profile: SocProfile, shape: DecodeAttention) -> None:
        self.profile = profile
        self.shape = shape
        self._broken: dict[tuple[int, ...], int] = {}

    def _count(self, row: tuple[int, ...]) -> int:
        n = self._broken.get(row)
        if n is None:
            n = len(violations(self.profile, self.shape, AttentionTiling(*row)))
            self._broken[row] = n
        return n

    def violation(self, columns: Columns) -> np.ndarray:
        rows = np.stack([np.asarray(columns[f], dtype=np.int64) for f in FIELDS], axis=-1)
        return np.array([self._count(tuple(int(v) for v in r)) for r in rows], dtype=float)

    def describe(self, columns: Columns) -> str:
        row = tuple(int(np.asarray(columns[f]).ravel()[0]) for f in FIELDS)
        return "; ".join(violations(self.profile, self.shape, AttentionTiling(*row)))


def attention_space(profile: SocProfile, shape: DecodeAttention) -> SearchSpace:
    """The tilings of ``shape`` on ``profile``: one SearchSpace for samplers and checks."""
    params = [Param.generic("kv_split", range(1, max_kv_split(profile, shape) + 1)),
              Param.generic("block_tile", BLOCK_TILES), Param.generic("l1_tile", L1_TILES),
              Param.generic("l0_tile", L0_TILES), Param.generic("pipeline", PIPELINES)]
    return SearchSpace(params, [_TilingRule(profile, shape)])
