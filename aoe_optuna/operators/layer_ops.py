"""Attention and the vector kernels as operators of a run, beside the GEMM shapes.

Each distinct problem (one decode, MLA decode or prefill attention shape; one vector
kernel's kind, rows, width and dtype) is an operator with a study of its own, named
like a GEMM shape's (``<study>/attention/<dims>``, ``<study>/rmsnorm/<dims>``): its
search space is the problem's tiling space with its rules (an infeasible tiling is
never measured), its measurement the simulator's model of the kernel, its baseline
CANN's default tiling, and its weight its calls per step. Each of these is its kind's
(:mod:`aoe_optuna.operators.kinds`); this module names, weighs and stores operators.
The simulator models these kernels and the npu backend times them on the chip
(:mod:`aoe_optuna.operators.npu_layer`); a run on another backend is refused before
anything is written (:func:`check_backend`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aoe_optuna.backends.base import BackendBase
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.operators.kinds.protocol import LayerKind, Problem
from aoe_optuna.operators.kinds.registry import kind_of, kind_of_plan
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Workload

MODELLED_BY = "simulator"  # the one backend whose models time these kernels


@dataclass(frozen=True)
class LayerOperator:
    """One distinct non-GEMM problem of a workload and the calls that run it. What differs
    between problems is its kind's (:mod:`aoe_optuna.operators.kinds`); this class only
    names, weighs and stores it."""

    problem: Problem
    dtype: str
    names: tuple[str, ...]  # the workload's layer-op names of this problem
    weight: int  # calls per step: the sum of their counts
    # the problem's kind: what differs between problems is asked of it
    operator_kind: LayerKind = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "operator_kind", kind_of(self.problem))

    @property
    def kind(self) -> str:
        """``attention`` or the vector kernel's kind (``add_rmsnorm``, ``swiglu``...)."""
        return self.operator_kind.label(self.problem)

    @property
    def op_name(self) -> str:
        """The knowledge base's op: ``decode_attention``, ``mla_decode_attention``,
        ``prefill_attention``, or the vector kernel's kind."""
        return self.operator_kind.op_name(self.problem)

    @property
    def key(self) -> tuple[Problem, str]:
        return (self.problem, self.dtype)

    @property
    def label(self) -> str:
        return self.kind + (f"+{len(self.names) - 1}" if len(self.names) > 1 else "")

    @property
    def dims(self) -> str:
        """The kind's dims of the problem, ``-<dtype>`` unless fp16."""
        suffix = "" if self.dtype == "fp16" else f"-{self.dtype}"
        return self.operator_kind.dims(self.problem) + suffix

    def problem_doc(self) -> dict[str, Any]:
        """The problem as the knowledge base keys it (every field that changes the kernel)."""
        return self.operator_kind.problem_doc(self.problem)

    @classmethod
    def from_plan(cls, plan: Mapping[str, Any]) -> LayerOperator:
        """The operator a plan entry (:meth:`plan_entry`) describes."""
        dtype = str(plan["dtype"])
        problem = kind_of_plan(plan).from_doc(plan["problem"], str(plan["kind"]), dtype)
        return cls(problem, dtype, tuple(plan["names"]), int(plan["weight"]))

    def study_name(self, parent: str) -> str:
        return f"{parent}/{self.label}/{self.dims}"

    def roofline_s(self, profile: SocProfile) -> float:
        return self.operator_kind.roofline_s(profile, self.problem)

    def bound_s(self, profile: SocProfile) -> float:
        """The latency no tiling can beat in the model, launch head included."""
        return self.operator_kind.bound_s(profile, self.problem)

    def flops(self) -> float | None:
        return self.operator_kind.flops(self.problem)

    def group(self, profile: SocProfile) -> str:
        """Operators whose roofline fractions compare: one dtype, one part (attention or
        the vector kernels)."""
        return f"{self.dtype}/{self.operator_kind.part}"

    def warm_doc(self) -> tuple[str, dict[str, Any]] | None:
        """Its knowledge base op and problem, where its kind's tilings carry over."""
        return (self.op_name, self.problem_doc()) if self.operator_kind.seeded else None

    def plan_entry(self, parent: str) -> dict[str, Any]:
        """What the operator's study holds. A kind whose plans predate ``op`` (decode
        attention, the vector kernels) writes none, so its older studies resume with the
        same plan."""
        plan: dict[str, Any] = {"study": self.study_name(parent), "kind": self.kind,
                                "dtype": self.dtype, "problem": self.problem_doc(),
                                "names": list(self.names), "weight": self.weight}
        if self.operator_kind.names_op_in_plan:
            plan["op"] = self.op_name
        return plan

    # ------------------------------------------------------------ its kernel
    def space(self, profile: SocProfile) -> SearchSpace:
        return self.operator_kind.space(profile, self.problem)

    def default_config(self, profile: SocProfile) -> dict[str, Any]:
        """CANN's default tiling: the kind's baseline."""
        return self.operator_kind.default_config(profile, self.problem)

    def model(self, profile: SocProfile) -> Callable[[Mapping[str, Any]], float]:
        """Seconds of one call under a feasible config: the simulator's model."""
        return self.operator_kind.model(profile, self.problem)


def layer_operators(workload: Workload) -> list[LayerOperator]:
    """The distinct attention and vector problems of ``workload``, attention first, each
    kind in the order its calls first appear."""
    groups: dict[tuple[Problem, str], list[tuple[str, int]]] = {}
    for call in workload.layer_ops:
        groups.setdefault((call.problem, call.dtype), []).append((call.name, call.count))
    ops = [LayerOperator(problem, dtype, tuple(n for n, _ in calls), sum(c for _, c in calls))
           for (problem, dtype), calls in groups.items()]
    # stable: each part keeps the order its calls first appear in
    return sorted(ops, key=lambda o: o.operator_kind.part != "attention")


def check_backend(backend: type[BackendBase], workload: Workload) -> None:
    """Refuse a run whose backend cannot time attention or the vector kernels (its
    ``layer_kernels``: neither by a model nor on its device)."""
    if workload.layer_ops and backend.layer_kernels is None:
        parts = sorted({call.part for call in workload.layer_ops})
        raise ValueError(
            f"workload: {' and '.join(parts)} 'tuned' needs the {MODELLED_BY} backend (its "
            f"models time these kernels) or the npu backend (the chip); backend "
            f"{backend.name!r} times GEMMs only")
