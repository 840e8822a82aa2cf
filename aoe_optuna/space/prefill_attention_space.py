"""Prefill attention's tiling space as a SearchSpace: the samplers' view of it.

The parameters are :class:`PrefillTiling`'s fields (``dealing`` a category);
the one rule is :func:`violations` itself (buffer capacities, tile nesting,
fractal alignment), a cached lookup as in the decode space
(attention_space.py), so a sampler sees exactly the tilings the model can
cost and an infeasible one is never measured. KV blocks longer than the
smallest one holding every key run the same kernel, so they are left out as
:func:`feasible_tilings` leaves them out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aoe_optuna.space.lookup_rule import LookupRule
from aoe_optuna.space.params import Param
from aoe_optuna.space.prefill_attention import (
    DEALINGS,
    KV_TILES,
    L1_TILES,
    PIPELINES,
    Q_TILES,
    PrefillAttention,
    PrefillTiling,
    violations,
)
from aoe_optuna.space.search_space import SearchSpace

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile

INT_FIELDS = ("q_tile", "kv_tile", "l1_tile", "pipeline")
FIELDS = (*INT_FIELDS, "dealing")


def kv_tiles(shape: PrefillAttention) -> tuple[int, ...]:
    """KV block sizes up to the smallest that holds every key."""
    holds_all = min([k for k in KV_TILES if k >= shape.keys], default=KV_TILES[-1])
    return tuple(k for k in KV_TILES if k <= holds_all)


def tiling_of(config: Mapping[str, Any]) -> PrefillTiling:
    return PrefillTiling(*(int(config[f]) for f in INT_FIELDS), str(config["dealing"]))


def config_of(tiling: PrefillTiling) -> dict[str, Any]:
    return {**{f: int(getattr(tiling, f)) for f in INT_FIELDS}, "dealing": tiling.dealing}


def prefill_attention_space(profile: SocProfile, shape: PrefillAttention) -> SearchSpace:
    """The tilings of ``shape`` on ``profile``: one SearchSpace for samplers and checks."""
    params = [Param.generic("q_tile", Q_TILES), Param.generic("kv_tile", kv_tiles(shape)),
              Param.generic("l1_tile", L1_TILES), Param.generic("pipeline", PIPELINES),
              Param.generic("dealing", DEALINGS)]
    rule = LookupRule("prefill_attention_tiling", FIELDS,  # dealing as its index
                      lambda row: violations(profile, shape,
                                             PrefillTiling(*row[:-1], DEALINGS[row[-1]])))
    return SearchSpace(params, [rule])
