"""GEMM as an operator kind: one (M, K, N, dtype, batch) and the tiling of its kernel.

Unlike the other kinds, a GEMM's space and measurement are the user's: the
space, its rules and the baseline config come from the spec
(:mod:`aoe_optuna.space.presets`, :mod:`aoe_optuna.space.search_space`,
:mod:`aoe_optuna.space.constraints`), and any backend times it (the
simulator's model is :mod:`aoe_optuna.aicore.gemm.model`). The problem
is :class:`aoe_optuna.workload.gemm.Gemm`; its knowledge base entry and C header
are :mod:`aoe_optuna.export.kb`'s own (filed under the spec's op,
:meth:`GemmKind.kb_op`); its kernels are the npu backend's
(:mod:`aoe_optuna.backends.npu.simple_gemm.kernel`, rewritten by
:mod:`aoe_optuna.export.kernel_source`) and catlass's instantiation header
(:mod:`aoe_optuna.export.catlass_header`). This module holds what the operator
code asks of a GEMM whatever its space: roofline, bound, FLOPs, its study's
name for the shape, its KB op and its roofline group.
"""

from __future__ import annotations

from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.kb_file import gemm_kb_op
from aoe_optuna.workload.gemm import Gemm


class GemmKind:
    name = "gemm"
    part = "gemm"

    def dims(self, g: Gemm) -> str:
        """``MxNxK``: the order in which the dashboard's study names give the shape (catlass's
        GemmCoord order); ``-<dtype>`` unless fp16; a batched launch adds ``-b<batch>``."""
        return (f"{g.M}x{g.N}x{g.K}" + ("" if g.dtype == "fp16" else f"-{g.dtype}")
                + (f"-b{g.batch}" if g.batch > 1 else ""))

    def roofline_s(self, profile: SocProfile, g: Gemm) -> float:
        return g.roofline_s(profile)

    def bound_s(self, profile: SocProfile, g: Gemm) -> float:
        """The roofline plus one cube kernel's launch head: no tiling of a GEMM beats it,
        and for the small GEMMs of a MoE step (a 1x2048x768 expert: about 1 us of
        roofline under 7.8 us of launch) the roofline alone shows a gain no tiling gives,
        which the scheduler would keep chasing."""
        return self.roofline_s(profile, g) + KERNEL_LAUNCH_S

    def flops(self, g: Gemm) -> float:
        return g.flops

    def kb_op(self, op_name: str, batch: int) -> str:
        """The KB's op of a shape (:func:`~aoe_optuna.export.kb_entry.gemm_kb_op`: a
        batched launch is filed as another kernel)."""
        return gemm_kb_op(op_name, batch)

    def group(self, profile: SocProfile, g: Gemm) -> str:
        """GEMMs whose roofline fractions compare: one dtype, one side of the ridge."""
        ridge = profile.peak_flops(g.dtype) / profile.hbm_bandwidth()
        return f"{g.dtype}/{'compute' if g.flops / g.min_bytes >= ridge else 'memory'}"


KIND = GemmKind()
