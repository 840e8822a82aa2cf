"""The operator kinds an operator run knows, and the one place a problem's type or a
stored plan is turned into its kind.

Adding a kind is one module beside these (:class:`.protocol.LayerKind`) and one
line in :data:`LAYER_KINDS`; below this layer, its problem (a dataclass that says its
part, kind and knowledge base fields, :mod:`aoe_optuna.space.layer_problem`) takes one
line in the simulator's list of modelled problems
(:data:`aoe_optuna.aicore.layer_models.LAYER_MODELS`), which the spec's
charge and the knowledge base read, and the workload emits its calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aoe_optuna.operators.kinds import (
    decode_attention,
    mla_attention,
    moe_gating,
    prefill_attention,
    vector,
)
from aoe_optuna.operators.kinds.gemm import KIND as GEMM
from aoe_optuna.operators.kinds.protocol import LayerKind

# Attention kinds first: an operator run lists attention before the vector kernels.
LAYER_KINDS: tuple[LayerKind, ...] = (
    decode_attention.KIND,
    mla_attention.KIND,
    prefill_attention.KIND,
    vector.KIND,
    moe_gating.KIND,
)

_BY_PROBLEM: dict[type, LayerKind] = {k.problem_type: k for k in LAYER_KINDS}
_BY_OP: dict[str, LayerKind] = {op: k for k in LAYER_KINDS for op in k.ops}
_BY_PLAN_KIND: dict[str, LayerKind] = {label: k for k in LAYER_KINDS for label in k.plan_kinds}


def kind_of(problem: Any) -> LayerKind:
    """The kind whose problem ``problem`` is."""
    kind = _BY_PROBLEM.get(type(problem))
    if kind is None:
        raise ValueError(f"no operator kind tunes a {type(problem).__name__}; known: "
                         f"{', '.join(sorted(t.__name__ for t in _BY_PROBLEM))}")
    return kind


def kind_of_plan(plan: Mapping[str, Any]) -> LayerKind:
    """The kind of a stored plan entry: by its ``op``, or, in a plan that names none (a
    kind whose plans predate ``op``), by its ``kind``."""
    op = plan.get("op")
    kind = _BY_OP.get(op) if op is not None else _BY_PLAN_KIND.get(plan.get("kind"))
    if kind is None:
        raise ValueError(f"plan: no operator kind for op {op!r}, kind {plan.get('kind')!r}")
    return kind


def kind_of_op(op: str) -> LayerKind | None:
    """The kind whose knowledge base entries are filed under ``op``; None for a GEMM's."""
    return _BY_OP.get(op)


__all__ = ["GEMM", "LAYER_KINDS", "kind_of", "kind_of_op", "kind_of_plan"]
