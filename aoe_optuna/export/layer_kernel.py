"""Export an attention or vector kernel study's best tiling as the kernel the npu backend
renders for it: catlass's flash-attention-infer instantiation header for attention
(:mod:`aoe_optuna.backends.npu.catlass_fai`), the Ascend C vector kernel for RMSNorm,
add + RMSNorm, SwiGLU and rope (:mod:`aoe_optuna.backends.npu.vector_kernel`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.backends.npu.catlass_args import CatlassArgError
from aoe_optuna.backends.npu.catlass_fai import fai_args, render_fai_header
from aoe_optuna.backends.npu.gemm_kernel import RenderError
from aoe_optuna.backends.npu.vector_kernel import render_vector_kernel
from aoe_optuna.export.catlass_header import provenance
from aoe_optuna.export.kernel_source import ExportError, ExportInfo, config_text, export_header
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.vector_ops import VectorOp

Problem = DecodeAttention | MlaDecodeAttention | PrefillAttention | VectorOp


def layer_kernel(problem: Problem, dtype: str, config: Mapping[str, Any], profile: SocProfile,
                 info: ExportInfo | None = None) -> tuple[str, str]:
    """The source text for ``problem`` under ``config``, and one line saying what it is."""
    if isinstance(problem, VectorOp):
        try:
            body = render_vector_kernel(problem, config, profile)
        except RenderError as exc:  # its message names the op
            raise ExportError(str(exc)) from None
        header = export_header(config_text(config), {}, info)
        buffered = "double" if int(config["double_buffer"]) else "single"
        return header + body, (f"Ascend C {problem.kind} kernel, tile_len "
                               f"{config['tile_len']}, {config['cores']} cores, "
                               f"{buffered} buffered")
    try:
        args = fai_args(problem, config, dtype, profile)
    except CatlassArgError as exc:
        phase = "prefill" if isinstance(problem, PrefillAttention) else "decode"
        raise ExportError(f"{phase} attention: {exc}") from None
    text = render_fai_header(args, provenance(info, config, dtype, profile.soc))
    missing = [c.param for c in args.counterparts if not c.matches]
    note = f"; no catlass counterpart: {', '.join(missing)}" if missing else ""
    return text, f"catlass flash-attention-infer ({args.phase}) instantiation{note}"


def write_layer_kernel(path: str | os.PathLike[str], problem: Problem, dtype: str,
                       config: Mapping[str, Any], profile: SocProfile,
                       info: ExportInfo | None = None) -> str:
    text, what = layer_kernel(problem, dtype, config, profile, info)
    write_atomic(path, text)
    return what

