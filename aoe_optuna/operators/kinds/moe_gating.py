"""The MoE router's gating (softmax over the experts + top-k, per token) as an operator
kind: CANN's MoeGatingTopKSoftmax tiling tuned per problem. Only MoE models have it.

Parts: the problem, its space, its rules and CANN's host tiling in
:mod:`aoe_optuna.workload.moe_gating`; the model, its default and best charge and
the floor in :mod:`aoe_optuna.aicore.vector.moe_gating`; the knowledge base's
op and problem fields on the problem (``KB_OP``, ``KB_FIELDS``); the kernel and its
host program (``templates/gating_bench.cpp``) in
:mod:`aoe_optuna.backends.npu.layer_kernels.moe_gating_kernel`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aoe_optuna.aicore.vector.moe_gating import floor_s, gating_cost
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.backends.npu.layer_kernels.moe_gating_kernel import (
    gating_program,
    problem_reason,
    render_gating_kernel,
)
from aoe_optuna.backends.npu.sources import RenderError
from aoe_optuna.export.kernel_source import ExportError, ExportInfo, config_text, export_header
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.moe_gating import MoeGating, cann_tiling, gating_space


class MoeGatingKind:
    name = MoeGating.KB_OP
    part = MoeGating.part
    problem_type = MoeGating
    ops = (MoeGating.KB_OP,)
    plan_kinds = ()
    names_op_in_plan = True
    seeded = False  # a few hundred tilings at most: measured out whatever the start
    kernel_suffix = ".cpp"

    def label(self, p: MoeGating) -> str:
        return p.kind

    def op_name(self, p: MoeGating) -> str:
        return p.KB_OP

    def dims(self, p: MoeGating) -> str:
        """``1x128-top8``: rows x experts, and k."""
        return f"{p.rows}x{p.experts}-top{p.top_k}"

    def problem_doc(self, p: MoeGating) -> dict[str, Any]:
        return {"rows": p.rows, "experts": p.experts, "top_k": p.top_k}

    def from_doc(self, doc: Mapping[str, Any], label: str, dtype: str) -> MoeGating:
        return MoeGating(doc["rows"], doc["experts"], doc["top_k"], dtype)

    def space(self, profile: SocProfile, p: MoeGating) -> SearchSpace:
        return gating_space(profile, p)

    def default_config(self, profile: SocProfile, p: MoeGating) -> dict[str, Any]:
        return dict(cann_tiling(profile, p))

    def model(self, profile: SocProfile, p: MoeGating) -> Callable[[Mapping[str, Any]], float]:
        return lambda c: gating_cost(profile, p, dict(c)).total_s

    def roofline_s(self, profile: SocProfile, p: MoeGating) -> float:
        return p.roofline_s(profile)

    def bound_s(self, profile: SocProfile, p: MoeGating) -> float:
        """A launch head and the call's bytes: at batch 1 the call is almost all head."""
        return floor_s(profile, p)

    def flops(self, p: MoeGating) -> None:
        return None

    def no_kernel(self, p: MoeGating, dtype: str, profile: SocProfile) -> str | None:
        return problem_reason(p)

    def render(self, p: MoeGating, dtype: str, config: Mapping[str, Any], profile: SocProfile,
               info: ExportInfo | None) -> tuple[str, str]:
        try:
            body = render_gating_kernel(p, config, profile)
        except RenderError as exc:  # its message names the problem
            raise ExportError(str(exc)) from None
        header = export_header(config_text(config), {}, info)
        buffered = "double" if int(config["double_buffer"]) else "single"
        return header + body, (f"Ascend C MoE gating kernel, {config['tile_rows']} rows x "
                               f"{config['col_tile']} experts per pass, {config['cores']} "
                               f"cores, {buffered} buffered")

    def npu_program(self, p: MoeGating, dtype: str, config: Mapping[str, Any],
                    profile: SocProfile, target: NpuTarget) -> KernelProgram:
        return gating_program(p, config, profile, target)


KIND = MoeGatingKind()
