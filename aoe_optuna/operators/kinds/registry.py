"""The operator kinds an operator run knows, and the one place a problem's type or a
stored plan is turned into its kind.

There is one list of the non-GEMM problem types: the AI Core's
(:data:`aoe_optuna.aicore.layer_models.LAYER_MODELS`, each type with its model), low
enough for the spec's charge, the knowledge base and the calibration's bands to read.
A kind is a module of this package whose ``KIND`` names its ``problem_type``
(:class:`.protocol.LayerKind`); nothing lists the modules: :data:`LAYER_KINDS` is
each of them, found here and put in that list's order, and a modelled type without a
kind, a kind whose type has no model or two kinds of one type is refused at import, in
one line naming them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from typing import Any

import aoe_optuna.operators.kinds as kinds_package
from aoe_optuna.aicore.layer_models import LAYER_MODELS
from aoe_optuna.operators.kinds.gemm import KIND as GEMM
from aoe_optuna.operators.kinds.protocol import LayerKind


def kind_modules() -> list[LayerKind]:
    """The ``KIND`` of every module of this package that tunes a problem type of its
    own (the GEMM's kind has none: its problem is the spec's)."""
    found = []
    for module in pkgutil.iter_modules(kinds_package.__path__):
        if f"{kinds_package.__name__}.{module.name}" == __name__:
            continue
        kind = getattr(importlib.import_module(f"{kinds_package.__name__}.{module.name}"),
                       "KIND", None)
        if getattr(kind, "problem_type", None) is not None:
            found.append(kind)
    return found


def in_model_order(modelled: Iterable[type], kinds: Iterable[LayerKind]) -> tuple[LayerKind, ...]:
    """One kind per modelled problem type, in the order of ``modelled``; ValueError (one
    line) for a type without a kind, a kind whose type is not modelled, or two kinds of
    one type."""
    modelled = list(modelled)
    by_type: dict[type, LayerKind] = {}
    twice = []
    for kind in kinds:
        if kind.problem_type in by_type:
            twice.append(kind.problem_type.__name__)
        by_type[kind.problem_type] = kind
    wrong = {"modelled without a kind": [t.__name__ for t in modelled if t not in by_type],
             "a kind without a model": [t.__name__ for t in by_type if t not in modelled],
             "two kinds of one type": twice}
    if any(wrong.values()):
        raise ValueError("operator kinds and aicore/layer_models.py:LAYER_MODELS disagree: "
                         + "; ".join(f"{what} {names}" for what, names in wrong.items()
                                     if names))
    return tuple(by_type[t] for t in modelled)


# In LAYER_MODELS's order: attention before the vector kernels.
LAYER_KINDS: tuple[LayerKind, ...] = in_model_order(LAYER_MODELS, kind_modules())

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


__all__ = ["GEMM", "LAYER_KINDS", "in_model_order", "kind_modules", "kind_of", "kind_of_op",
           "kind_of_plan"]
