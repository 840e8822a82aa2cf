"""Decode attention (paged KV, GQA) as an operator kind: IncreFlashAttention's
tiling tuned per problem.

Parts: the problem and its tiling rules, CANN's default (IncreFlashAttention's
host rules) in :mod:`aoe_optuna.space.decode_attention`; the space in
:mod:`aoe_optuna.space.attention_space`; the model, roofline and floor in
:mod:`aoe_optuna.aicore.attention.decode_attention`;
the knowledge base's op and problem fields on the problem (``KB_OP``,
``KB_FIELDS``); the kernel in
:mod:`.attention_render`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aoe_optuna.aicore.attention.decode_attention import decode_attention_cost, floor_s
from aoe_optuna.aicore.attention.decode_attention import roofline_s as model_roofline_s
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.export.kernel_source import ExportInfo
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.operators.kinds.attention_render import (
    fai_problem_reason,
    fai_program_for,
    render_fai,
)
from aoe_optuna.space.attention_space import attention_space, config_of, tiling_of
from aoe_optuna.space.decode_attention import DecodeAttention, cann_default_tiling
from aoe_optuna.space.search_space import SearchSpace


class DecodeAttentionKind:
    name = DecodeAttention.KB_OP
    part = "attention"
    problem_type = DecodeAttention
    ops = (DecodeAttention.KB_OP,)
    plan_kinds = ("attention",)  # its plans name no op: they predate the other attention kinds
    names_op_in_plan = False
    seeded = True  # a tiling carries over, its KV split scaled with the context
    kernel_suffix = ".h"

    def label(self, p: DecodeAttention) -> str:
        return "attention"

    def op_name(self, p: DecodeAttention) -> str:
        return DecodeAttention.KB_OP

    def dims(self, p: DecodeAttention) -> str:
        """``b1-q28-kv4-d128-s1024``; ``-p<page>``, the layout and ``-t<query tokens>``
        when not the defaults."""
        text = f"b{p.batch}-q{p.q_heads}-kv{p.kv_heads}-d{p.head_dim}-s{p.context}"
        if p.page_tokens != 128:
            text += f"-p{p.page_tokens}"
        if p.kv_layout != "BNSD":
            text += f"-{p.kv_layout}"
        if p.q_tokens is not None:
            text += f"-t{p.q_tokens}"
        return text

    def problem_doc(self, p: DecodeAttention) -> dict[str, Any]:
        doc = {"batch": p.batch, "q_heads": p.q_heads, "kv_heads": p.kv_heads,
               "head_dim": p.head_dim, "context": p.context,
               "page_tokens": p.page_tokens, "kv_layout": p.kv_layout}
        if p.q_tokens is not None:  # absent for one token: older entries keep their key
            doc["q_tokens"] = p.q_tokens
        return doc

    def from_doc(self, doc: Mapping[str, Any], label: str, dtype: str) -> DecodeAttention:
        return DecodeAttention(dtype_bytes=DTYPE_BYTES[dtype], **doc)

    def space(self, profile: SocProfile, p: DecodeAttention) -> SearchSpace:
        return attention_space(profile, p)

    def default_config(self, profile: SocProfile, p: DecodeAttention) -> dict[str, Any]:
        return config_of(cann_default_tiling(profile, p))

    def model(self, profile: SocProfile,
              p: DecodeAttention) -> Callable[[Mapping[str, Any]], float]:
        return lambda c: decode_attention_cost(profile, p, tiling_of(c)).total_s

    def roofline_s(self, profile: SocProfile, p: DecodeAttention) -> float:
        return model_roofline_s(profile, p)

    def bound_s(self, profile: SocProfile, p: DecodeAttention) -> float:
        return floor_s(profile, p)

    def flops(self, p: DecodeAttention) -> float:
        return p.flops

    def no_kernel(self, p: DecodeAttention, dtype: str, profile: SocProfile) -> str | None:
        return fai_problem_reason("decode", p, dtype, profile)

    def render(self, p: DecodeAttention, dtype: str, config: Mapping[str, Any],
               profile: SocProfile, info: ExportInfo | None) -> tuple[str, str]:
        return render_fai("decode", p, dtype, config, profile, info)

    def npu_program(self, p: DecodeAttention, dtype: str, config: Mapping[str, Any],
                    profile: SocProfile, target: NpuTarget) -> KernelProgram:
        return fai_program_for(p, dtype, config, profile, target)


KIND = DecodeAttentionKind()
