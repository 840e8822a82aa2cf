"""What every operator kind tells the layer code, so that the code holds a kind and
never asks a problem what type it is.

A kind is one module of :mod:`aoe_optuna.operators.kinds` that gathers, for one
family of problems, where each of its parts lives: the problem (a frozen
dataclass of a lower layer), its tiling space and rules, CANN's default tiling,
the simulator's model, the roofline and the bound, its knowledge base entry, the
kernel the npu backend renders for it and the program that times it there. The
parts stay in the layer that needs them (the spec charges untuned attention with
the same model, the knowledge base validates entries with the same
problem fields); the kind is the one place that names them all.

:class:`LayerKind` is a kind whose kernel an operator run tunes in a study of
its own, measured by the simulator's model (attention, the vector kernels).
GEMM is a kind too (:mod:`.gemm`), but its space and measurement come from the
user's spec and backend, so it answers only what :class:`OperatorKind` asks.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, Protocol

from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.export.kernel_source import ExportInfo
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.search_space import SearchSpace

Problem = Hashable  # one kind's frozen problem dataclass


class OperatorKind(Protocol):
    """What every kind answers about one of its problems."""

    name: str  # the registry's name of the kind ("gemm", "decode_attention", "vector")
    part: str  # the step split's part its calls belong to: "gemm", "attention", "vector"

    def roofline_s(self, profile: SocProfile, problem: Any) -> float: ...
    def bound_s(self, profile: SocProfile, problem: Any) -> float:
        """The latency no tiling can beat, launch head included: what the scheduler aims at."""
        ...
    def flops(self, problem: Any) -> float | None:
        """None where FLOPs say nothing (a vector kernel)."""
        ...


class LayerKind(OperatorKind, Protocol):
    """A kind the simulator's model times, tuned in a study of its own."""

    problem_type: type  # the problem dataclass: the registry's key for it
    ops: tuple[str, ...]  # the knowledge base ops its entries are filed under
    plan_kinds: tuple[str, ...]  # a plan's ``kind`` read as this kind when it names no op
    names_op_in_plan: bool  # plans written before the kind existed had no ``op``: keep them
    seeded: bool  # whether its tilings carry over between problems (operators.warm_start)
    kernel_suffix: str  # the exported kernel's file suffix

    def label(self, problem: Any) -> str:
        """``attention`` or the vector kernel's kind: the plan's ``kind``."""
        ...
    def op_name(self, problem: Any) -> str:
        """The knowledge base's op of the problem."""
        ...
    def dims(self, problem: Any) -> str:
        """The problem's sizes as its study name shows them (without the dtype)."""
        ...
    def problem_doc(self, problem: Any) -> dict[str, Any]:
        """The problem as the knowledge base and the plan key it."""
        ...
    def from_doc(self, doc: Mapping[str, Any], label: str, dtype: str) -> Any:
        """The problem :meth:`problem_doc` wrote (``label``: the plan's ``kind``)."""
        ...
    def space(self, profile: SocProfile, problem: Any) -> SearchSpace:
        """The tiling space with its rules: an infeasible tiling is never measured."""
        ...
    def default_config(self, profile: SocProfile, problem: Any) -> dict[str, Any]:
        """CANN's default tiling: the baseline of the problem's study."""
        ...
    def model(self, profile: SocProfile, problem: Any) -> Callable[[Mapping[str, Any]], float]:
        """Seconds of one call under a feasible config: the simulator's model."""
        ...
    def no_kernel(self, problem: Any, dtype: str, profile: SocProfile) -> str | None:
        """Why the npu backend renders no kernel for ``problem`` whatever the tiling (a
        problem, dtype or SoC its kernel lacks), in one line; None where it renders one,
        and then every feasible tiling of :meth:`space` renders."""
        ...
    def render(self, problem: Any, dtype: str, config: Mapping[str, Any], profile: SocProfile,
               info: ExportInfo | None) -> tuple[str, str]:
        """The kernel source the npu backend renders for ``config`` and one line saying
        what it is; :class:`~aoe_optuna.export.kernel_source.ExportError` where it cannot
        (for a feasible tiling: only where :meth:`no_kernel` says why)."""
        ...
    def npu_program(self, problem: Any, dtype: str, config: Mapping[str, Any],
                    profile: SocProfile, target: NpuTarget) -> KernelProgram:
        """The kernel under ``config`` with the host program the npu backend builds, runs,
        checks against a host reference and times (the GEMM's timing policy);
        :class:`~aoe_optuna.backends.npu.kernel_program.ProgramUnavailable` (one line)
        where the backend cannot time the problem whatever the tiling: what
        :meth:`no_kernel` says, a run mode or a toolchain the program lacks."""
        ...
