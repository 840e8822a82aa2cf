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

import numpy as np

from aoe_optuna.space.constraints import Columns
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


class _PrefillTilingRule:
    """Every rule of :func:`violations`, as one: 0 for a feasible tiling, else the number
    of rules it breaks. ``dealing`` arrives as its index in :data:`DEALINGS`."""

    name = "prefill_attention_tiling"
    variables = frozenset(FIELDS)

    def __init__(self, profile: SocProfile, shape: PrefillAttention) -> None:
        self.profile = profile
        self.shape = shape
        self._broken: dict[tuple[int, ...], int] = {}

    def _tiling(self, row: tuple[int, ...]) -> PrefillTiling:
        return PrefillTiling(*row[:-1], DEALINGS[row[-1]])

    def _count(self, row: tuple[int, ...]) -> int:
        n = self._broken.get(row)
        if n is None:
            n = len(violations(self.profile, self.shape, self._tiling(row)))
            self._broken[row] = n
        return n

    def violation(self, columns: Columns) -> np.ndarray:
        rows = np.stack([np.asarray(columns[f], dtype=np.int64) for f in FIELDS], axis=-1)
        return np.array([self._count(tuple(int(v) for v in r)) for r in rows], dtype=float)

    def describe(self, columns: Columns) -> str:
        row = tuple(int(np.asarray(columns[f]).ravel()[0]) for f in FIELDS)
        return "; ".join(violations(self.profile, self.shape, self._tiling(row)))


def prefill_attention_space(profile: SocProfile, shape: PrefillAttention) -> SearchSpace:
    """The tilings of ``shape`` on ``profile``: one SearchSpace for samplers and checks."""
    params = [Param.generic("q_tile", Q_TILES), Param.generic("kv_tile", kv_tiles(shape)),
              Param.generic("l1_tile", L1_TILES), Param.generic("pipeline", PIPELINES),
              Param.generic("dealing", DEALINGS)]
    return SearchSpace(params, [_PrefillTilingRule(profile, shape)])
