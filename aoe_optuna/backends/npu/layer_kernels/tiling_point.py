"""A config as the feasible point of a kernel's space that its renderer writes in.

The vector and MoE gating kernels take their space's rules as the kernel's own: every
feasible tiling renders, and anything else is refused in one line naming the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aoe_optuna.backends.npu.sources import RenderError
from aoe_optuna.space.params import ParamError
from aoe_optuna.space.search_space import SearchSpace


def feasible_point(space: SearchSpace, config: Mapping[str, Any], label: str) -> dict[str, int]:
    """``config``'s values of ``space``'s parameters; RenderError (one line, starting with
    ``label``) when one is missing, out of range, or the point breaks a rule."""
    missing = [n for n in space.names if n not in config]
    if missing:
        raise RenderError(f"{label}: config lacks {missing}")
    point = {n: int(config[n]) for n in space.names}
    try:
        reasons = space.explain(point)
    except ParamError as exc:
        raise RenderError(f"{label}: {exc}") from None
    if reasons:
        raise RenderError(f"{label}: {reasons[0]}")
    return point
