"""What a non-GEMM problem says of itself, so that the code below the operator kinds
(the workload's layer ops, the spec's charge, the knowledge base) never asks its type.

Each problem dataclass (decode, MLA decode and prefill attention, a vector kernel,
the MoE router's gating) carries, as class attributes:

* ``part``: the step split's part its calls belong to (``attention``, ``vector``);
* ``kind``: what a plan and a study name call it (``attention``, or the vector
  kernel's kind, which a :class:`~aoe_optuna.workload.vector_ops.VectorOp` holds
  per instance);
* ``KB_FIELDS``: per knowledge base op it is filed under, the problem fields an
  entry keys and the tiling parameters its config holds (:class:`ProblemFields`),
  which :mod:`aoe_optuna.export.kb_entry` checks.

It lives in the lowest layer that holds a problem (the attention problems are
:mod:`aoe_optuna.space`'s).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

# A cross-field rule of an entry's problem: None, or (the field, what was expected of it).
FieldRule = Callable[[Mapping[str, Any]], tuple[str, str] | None]


# A tiling parameter's values: the choices its space draws from, or None where they
# depend on the problem and the chip (then any integer from 1 up).
Domain = tuple[Any, ...] | None


@dataclass(frozen=True)
class ProblemFields:
    """The problem fields of one knowledge base op: each an integer from 1 up, except
    those in ``names`` (one of the given names) and ``flags`` (true or false); and the
    parameters of its tiling space, every one of which an entry's config holds
    (``tests/operators/test_kinds.py`` checks them against each kind's space)."""

    part: str  # the entry's ``kind``: the step part of its problem
    fields: tuple[str, ...]  # present in every entry, in this order
    optional: tuple[str, ...] = ()  # an entry may leave these out
    names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    rule: FieldRule | None = None
    tiling: Mapping[str, Domain] = field(default_factory=dict)


class LayerProblem(Hashable, Protocol):
    """A non-GEMM problem of a step: a frozen dataclass that describes itself."""

    part: str
    kind: str
    KB_FIELDS: ClassVar[Mapping[str, ProblemFields]]
