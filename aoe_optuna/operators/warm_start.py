"""Where a shape's first configs come from: its neighbours' winners.

Good tilings of nearby shapes are good guesses: a tile that suits a
4096-wide projection usually suits a 3584-wide one. A shape's study is
seeded with the best configs of the shapes already tuned in the same run and
of the knowledge base's entries for the same SoC, op and dtype, nearest first
(nearness as the knowledge base measures it: distance in log2 M, K, N). The
seeds are ordinary measurements, charged to the budget; the sampler then
learns from them like from any other trial.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aoe_optuna.operators.shapes import OperatorShape
from aoe_optuna.space.search_space import SearchSpace


@dataclass(frozen=True)
class Donor:
    """A config known to be good for some shape."""

    dims: tuple[int, int, int]  # (M, K, N) of the shape it won on
    params: dict[str, Any]
    source: str  # "shape <dims>" or "kb <study>"
    dtype: str = "fp16"

    def distance(self, shape: OperatorShape) -> float:
        return math.sqrt(sum((math.log2(a) - math.log2(b)) ** 2
                             for a, b in zip(self.dims, shape.key[:3], strict=True)))


def kb_donors(entries: Iterable[Mapping[str, Any]], soc: str, op: str,
              dtype: str | None = None) -> list[Donor]:
    """The knowledge base's entries of the same SoC and op (and ``dtype``, if given) as
    donors; the tuner gives each shape only donors of its own dtype."""
    return [Donor((e["M"], e["K"], e["N"]), dict(e["config"]), f"kb {e['study']}", e["dtype"])
            for e in entries if e.get("kind", "gemm") == "gemm" and (e["soc"], e["op"]) == (soc, op)
            and (dtype is None or e["dtype"] == dtype)]


def seeds_for(shape: OperatorShape, donors: Sequence[Donor], space: SearchSpace,
              tried: Iterable[Mapping[str, Any]], limit: int) -> list[Donor]:
    """Up to ``limit`` donors for ``shape``, nearest first, each a new, feasible config of
    ``space`` (its values among the space's choices; untuned keys dropped)."""
    seen = [dict(t) for t in tried]
    out: list[Donor] = []
    for donor in sorted(donors, key=lambda d: (d.distance(shape), d.source)):
        if len(out) >= limit:
            break
        params = _in_space(donor.params, space)
        if params is None or params in seen:
            continue
        seen.append(params)
        out.append(Donor(donor.dims, params, donor.source, donor.dtype))
    return out


def _in_space(config: Mapping[str, Any], space: SearchSpace) -> dict[str, Any] | None:
    """``config`` restricted to the space's parameters; None if a value is not a choice
    or the config breaks a rule of the space."""
    params: dict[str, Any] = {}
    for p in space.params:
        if p.name not in config or config[p.name] not in p.choices:
            return None
        params[p.name] = config[p.name]
    if space.explain(params):
        return None
    return params
