"""Decode attention's tiling space as a SearchSpace: the samplers' view of it.

The parameters are :class:`AttentionTiling`'s fields; the one rule is
:func:`violations` itself (buffer capacities, tile nesting, page alignment,
the KV split's range), so a sampler sees exactly the tilings the model can
cost and an infeasible one is never measured. The rule is a lookup in the
feasible set, enumerated once per problem (at most a few ten thousand
tilings), which keeps it vectorised for the samplers' candidate scoring.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aoe_optuna.space.decode_attention import (
    BLOCK_TILES,
    L0_TILES,
    L1_TILES,
    PIPELINES,
    AttentionTiling,
    DecodeAttention,
    violations,
)
from aoe_optuna.space.lookup_rule import LookupRule
from aoe_optuna.space.paged_kv import max_kv_split
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile

FIELDS = ("kv_split", "block_tile", "l1_tile", "l0_tile", "pipeline")


def tiling_of(config: Mapping[str, Any]) -> AttentionTiling:
    return AttentionTiling(*(int(config[f]) for f in FIELDS))


def config_of(tiling: AttentionTiling) -> dict[str, int]:
    return {f: int(getattr(tiling, f)) for f in FIELDS}


def attention_space(profile: SocProfile, shape: DecodeAttention) -> SearchSpace:
    """The tilings of ``shape`` on ``profile``: one SearchSpace for samplers and checks."""
    params = [Param.generic("kv_split", range(1, max_kv_split(profile, shape) + 1)),
              Param.generic("block_tile", BLOCK_TILES), Param.generic("l1_tile", L1_TILES),
              Param.generic("l0_tile", L0_TILES), Param.generic("pipeline", PIPELINES)]
    rule = LookupRule("attention_tiling", FIELDS,
                      lambda row: violations(profile, shape, AttentionTiling(*row)))
    return SearchSpace(params, [rule])
