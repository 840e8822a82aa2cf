"""What the three attention kinds (decode, prefill, MLA decode) share, so that each
kind's module holds only what differs: its problem's sizes and knowledge base fields.

An attention kind names its parts in two tables: :class:`AttentionParts`, the tiling
space and the library's default tiling (:mod:`aoe_optuna.space`) with the model, its
roofline and its floor (:mod:`aoe_optuna.aicore.attention`); and
:class:`CatlassKernel`, the catlass example the npu backend instantiates for it and
the host program that times it (:mod:`aoe_optuna.backends.npu.catlass`: ``fai``,
catlass's flash-attention-infer, for decode and prefill; ``mla`` for MLA decode).
:class:`AttentionKind` answers the kind protocol from the two.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aoe_optuna.backends.npu.catlass.args import CatlassArgError
from aoe_optuna.backends.npu.catlass.fai import (
    fai_args,
    fai_program,
    problem_reason,
    render_fai_header,
)
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.export.catlass_header import provenance
from aoe_optuna.export.kernel_source import ExportError, ExportInfo
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.search_space import SearchSpace


@dataclass(frozen=True)
class AttentionParts:
    """Where an attention problem's tiling space, default tiling and model live."""

    space: Callable[[SocProfile, Any], SearchSpace]
    default_tiling: Callable[[SocProfile, Any], Any]  # the library's tiling: the baseline
    config_of: Callable[[Any], dict[str, Any]]  # a tiling as a study's config
    tiling_of: Callable[[Mapping[str, Any]], Any]  # and back
    cost: Callable[[SocProfile, Any, Any], Any]  # the model: a cost with ``total_s``
    roofline_s: Callable[[SocProfile, Any], float]
    floor_s: Callable[[SocProfile, Any], float]


@dataclass(frozen=True)
class CatlassKernel:
    """The catlass example the npu backend instantiates for an attention problem."""

    title: str  # how its one-line refusals name the problem: "decode attention"
    problem_reason: Callable[[Any, str, SocProfile], str | None]
    args: Callable[[Any, Mapping[str, Any], str, SocProfile], Any]  # CatlassArgError
    header: Callable[[Any, Sequence[str]], str]  # the instantiation header of its args
    # the build tree that times a problem under a config (its header with the provenance)
    program: Callable[[Any, Mapping[str, Any], str, SocProfile, NpuTarget, Sequence[str]],
                      KernelProgram]
    what: Callable[[Any], str]  # what the header is, from its args


def fai_kernel(phase: str) -> CatlassKernel:
    """catlass's flash-attention-infer for ``phase`` (``decode`` or ``prefill``)."""
    return CatlassKernel(
        title=f"{phase} attention", problem_reason=problem_reason, args=fai_args,
        header=render_fai_header, program=fai_program,
        what=lambda a: f"catlass flash-attention-infer ({a.phase}) instantiation")


class AttentionKind:
    """An attention kind: a problem type (with its ``KB_OP`` and ``flops``), its
    :class:`AttentionParts` and its :class:`CatlassKernel`; a subclass adds its
    problem's ``dims`` and ``problem_doc`` (:class:`~.protocol.LayerKind`)."""

    part = "attention"
    kernel_suffix = ".h"
    plan_kinds: tuple[str, ...] = ()
    names_op_in_plan = True  # plans of every attention kind but decode's name their op
    problem_type: type[Any]  # the problem dataclass, with its KB_OP
    seeded: bool  # whether its tilings carry over between problems
    parts: AttentionParts
    kernel: CatlassKernel

    def __init__(self) -> None:
        self.name: str = self.problem_type.KB_OP
        self.ops: tuple[str, ...] = (self.name,)

    def label(self, p: Any) -> str:
        return "attention"

    def op_name(self, p: Any) -> str:
        return self.name

    def from_doc(self, doc: Mapping[str, Any], label: str, dtype: str) -> Any:
        return self.problem_type(dtype_bytes=DTYPE_BYTES[dtype], **doc)

    def space(self, profile: SocProfile, p: Any) -> SearchSpace:
        return self.parts.space(profile, p)

    def default_config(self, profile: SocProfile, p: Any) -> dict[str, Any]:
        return self.parts.config_of(self.parts.default_tiling(profile, p))

    def model(self, profile: SocProfile, p: Any) -> Callable[[Mapping[str, Any]], float]:
        cost, tiling_of = self.parts.cost, self.parts.tiling_of
        return lambda c: cost(profile, p, tiling_of(c)).total_s

    def roofline_s(self, profile: SocProfile, p: Any) -> float:
        return self.parts.roofline_s(profile, p)

    def bound_s(self, profile: SocProfile, p: Any) -> float:
        return self.parts.floor_s(profile, p)

    def flops(self, p: Any) -> float:
        return p.flops

    def no_kernel(self, p: Any, dtype: str, profile: SocProfile) -> str | None:
        why = self.kernel.problem_reason(p, dtype, profile)
        return None if why is None else f"{self.kernel.title}: {why}"

    def render(self, p: Any, dtype: str, config: Mapping[str, Any], profile: SocProfile,
               info: ExportInfo | None) -> tuple[str, str]:
        """The instantiation header for ``config``; a problem catlass's kernel cannot run
        is refused in one line naming the kind's problem."""
        try:
            args = self.kernel.args(p, config, dtype, profile)
        except CatlassArgError as exc:
            raise ExportError(f"{self.kernel.title}: {exc}") from None
        text = self.kernel.header(args, provenance(info, config, dtype, profile.soc))
        missing = [c.param for c in args.counterparts if not c.matches]
        note = f"; no catlass counterpart: {', '.join(missing)}" if missing else ""
        return text, self.kernel.what(args) + note

    def npu_program(self, p: Any, dtype: str, config: Mapping[str, Any], profile: SocProfile,
                    target: NpuTarget) -> KernelProgram:
        """The build tree that times ``p`` under ``config``, its header carrying the same
        provenance lines as the exported one."""
        return self.kernel.program(p, config, dtype, profile, target,
                                   provenance(None, config, dtype, profile.soc))
