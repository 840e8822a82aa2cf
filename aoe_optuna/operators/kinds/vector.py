"""The vector kernels (RMSNorm, add + RMSNorm, SwiGLU, rope) as one operator kind:
an Ascend C kernel's tile length, cores and buffering tuned per problem.

Parts: the problem and its kinds in :mod:`aoe_optuna.workload.vector_ops`; the
space, its rules and the default (every core with work, double buffered, the
largest tile) in :mod:`aoe_optuna.workload.vector_space`; the model and floor in
:mod:`aoe_optuna.aicore.vector.vector_ops`; the knowledge base files each
under its vector kind (the problem's ``KB_FIELDS``); the kernel and its host program
(``templates/vector_bench.cpp``) in
:mod:`aoe_optuna.backends.npu.layer_kernels.vector_kernel`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aoe_optuna.aicore.vector.vector_ops import floor_s, vector_op_cost
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.backends.npu.layer_kernels.vector_kernel import (
    problem_reason,
    render_vector_kernel,
    vector_program,
)
from aoe_optuna.backends.npu.sources import RenderError
from aoe_optuna.export.kernel_source import ExportError, ExportInfo, config_text, export_header
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.vector_ops import KINDS, VectorOp
from aoe_optuna.workload.vector_space import default_config, vector_space


class VectorKind:
    name = "vector"
    part = "vector"
    problem_type = VectorOp
    ops = tuple(sorted(KINDS))  # each vector kind is an op of its own
    plan_kinds = tuple(KINDS)
    names_op_in_plan = False
    seeded = False  # at batch 1 a few dozen tilings: measured out whatever the start
    kernel_suffix = ".cpp"

    def label(self, p: VectorOp) -> str:
        return p.kind

    def op_name(self, p: VectorOp) -> str:
        return p.kind

    def dims(self, p: VectorOp) -> str:
        return f"{p.rows}x{p.width}"

    def problem_doc(self, p: VectorOp) -> dict[str, Any]:
        doc: dict[str, Any] = {"rows": p.rows, "width": p.width}
        if p.kind == "rope":
            doc["head_dim"] = p.head_dim
        return doc

    def from_doc(self, doc: Mapping[str, Any], label: str, dtype: str) -> VectorOp:
        return VectorOp(label, doc["rows"], doc["width"], dtype, doc.get("head_dim", 128))

    def space(self, profile: SocProfile, p: VectorOp) -> SearchSpace:
        return vector_space(profile, p)

    def default_config(self, profile: SocProfile, p: VectorOp) -> dict[str, Any]:
        return default_config(profile, p)

    def model(self, profile: SocProfile, p: VectorOp) -> Callable[[Mapping[str, Any]], float]:
        return lambda c: vector_op_cost(profile, p, dict(c)).total_s

    def roofline_s(self, profile: SocProfile, p: VectorOp) -> float:
        return p.roofline_s(profile)

    def bound_s(self, profile: SocProfile, p: VectorOp) -> float:
        """At batch 1 a vector kernel is almost all launch: its roofline alone would have
        the scheduler chase a gain no tiling gives."""
        return floor_s(profile, p)

    def flops(self, p: VectorOp) -> None:
        return None

    def no_kernel(self, p: VectorOp, dtype: str, profile: SocProfile) -> str | None:
        return problem_reason(p)

    def render(self, p: VectorOp, dtype: str, config: Mapping[str, Any], profile: SocProfile,
               info: ExportInfo | None) -> tuple[str, str]:
        try:
            body = render_vector_kernel(p, config, profile)
        except RenderError as exc:  # its message names the op
            raise ExportError(str(exc)) from None
        header = export_header(config_text(config), {}, info)
        buffered = "double" if int(config["double_buffer"]) else "single"
        return header + body, (f"Ascend C {p.kind} kernel, tile_len {config['tile_len']}, "
                               f"{config['cores']} cores, {buffered} buffered")

    def npu_program(self, p: VectorOp, dtype: str, config: Mapping[str, Any],
                    profile: SocProfile, target: NpuTarget) -> KernelProgram:
        return vector_program(p, config, profile, target)


KIND = VectorKind()
