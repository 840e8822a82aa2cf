"""MLA decode attention's tiling space as a SearchSpace: the samplers' view of it.

The parameters are :class:`MlaTiling`'s fields; the one rule is
:func:`violations` itself (buffer capacities, the head tiles of the shape,
the KV split's range), a cached lookup as in the GQA/MQA decode space
(attention_space.py), so a sampler sees exactly the tilings the model can
cost and an infeasible one is never measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aoe_optuna.space.lookup_rule import LookupRule
from aoe_optuna.space.mla_attention import (
    BLOCK_PAGES,
    PIPELINES,
    RESIDENT,
    MlaDecodeAttention,
    MlaTiling,
    head_tiles,
    violations,
)
from aoe_optuna.space.paged_kv import max_kv_split
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile

FIELDS = ("head_tile", "kv_split", "block_pages", "resident", "pipeline")


def tiling_of(config: Mapping[str, Any]) -> MlaTiling:
    return MlaTiling(*(int(config[f]) for f in FIELDS))


def config_of(tiling: MlaTiling) -> dict[str, int]:
    return {f: int(getattr(tiling, f)) for f in FIELDS}


def mla_attention_space(profile: SocProfile, shape: MlaDecodeAttention) -> SearchSpace:
    """The tilings of ``shape`` on ``profile``: one SearchSpace for samplers and checks."""
    params = [Param.generic("head_tile", head_tiles(shape)),
              Param.generic("kv_split", range(1, max_kv_split(profile, shape) + 1)),
              Param.generic("block_pages", BLOCK_PAGES), Param.generic("resident", RESIDENT),
              Param.generic("pipeline", PIPELINES)]
    rule = LookupRule("mla_attention_tiling", FIELDS,
                      lambda row: violations(profile, shape, MlaTiling(*row)))
    return SearchSpace(params, [rule])
