"""MLA decode attention (DeepSeek's latent KV) as an operator kind: catlass's MLA
example's tiling tuned per problem.

Parts: the problem and its tiling rules, catlass's default in
:mod:`aoe_optuna.space.mla_attention`; the space in
:mod:`aoe_optuna.space.mla_attention_space`; the model, roofline and floor in
:mod:`aoe_optuna.aicore.attention.mla_attention`;
the knowledge base's op and problem fields on the problem (``KB_OP``,
``KB_FIELDS``); the kernel (catlass's ``examples/19_mla`` instantiated) and its host
program in :mod:`aoe_optuna.backends.npu.catlass.mla`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aoe_optuna.aicore.attention.mla_attention import floor_s, mla_attention_cost
from aoe_optuna.aicore.attention.mla_attention import roofline_s as model_roofline_s
from aoe_optuna.backends.npu.catlass.args import CatlassArgError
from aoe_optuna.backends.npu.catlass.mla import (
    mla_args,
    mla_program,
    problem_reason,
    render_mla_header,
)
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.export.catlass_header import provenance
from aoe_optuna.export.kernel_source import ExportError, ExportInfo
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.mla_attention import MlaDecodeAttention, catlass_default_tiling
from aoe_optuna.space.mla_attention_space import config_of, mla_attention_space, tiling_of
from aoe_optuna.space.search_space import SearchSpace


class MlaAttentionKind:
    name = MlaDecodeAttention.KB_OP
    part = "attention"
    problem_type = MlaDecodeAttention
    ops = (MlaDecodeAttention.KB_OP,)
    plan_kinds = ()
    names_op_in_plan = True
    seeded = False  # no family: it takes and gives no seeds
    kernel_suffix = ".h"

    def label(self, p: MlaDecodeAttention) -> str:
        return "attention"

    def op_name(self, p: MlaDecodeAttention) -> str:
        return MlaDecodeAttention.KB_OP

    def dims(self, p: MlaDecodeAttention) -> str:
        """``mla-b1-q16-l512-r64-s1024`` (latent rank, rope width); ``-p<page>`` when
        not 128."""
        text = (f"mla-b{p.batch}-q{p.q_heads}-l{p.kv_lora_rank}-r{p.qk_rope_head_dim}"
                f"-s{p.context}")
        if p.page_tokens != 128:
            text += f"-p{p.page_tokens}"
        return text

    def problem_doc(self, p: MlaDecodeAttention) -> dict[str, Any]:
        return {"batch": p.batch, "q_heads": p.q_heads, "kv_lora_rank": p.kv_lora_rank,
                "qk_rope_head_dim": p.qk_rope_head_dim, "context": p.context,
                "page_tokens": p.page_tokens}

    def from_doc(self, doc: Mapping[str, Any], label: str, dtype: str) -> MlaDecodeAttention:
        return MlaDecodeAttention(dtype_bytes=DTYPE_BYTES[dtype], **doc)

    def space(self, profile: SocProfile, p: MlaDecodeAttention) -> SearchSpace:
        return mla_attention_space(profile, p)

    def default_config(self, profile: SocProfile, p: MlaDecodeAttention) -> dict[str, Any]:
        return config_of(catlass_default_tiling(profile, p))

    def model(self, profile: SocProfile,
              p: MlaDecodeAttention) -> Callable[[Mapping[str, Any]], float]:
        return lambda c: mla_attention_cost(profile, p, tiling_of(c)).total_s

    def roofline_s(self, profile: SocProfile, p: MlaDecodeAttention) -> float:
        return model_roofline_s(profile, p)

    def bound_s(self, profile: SocProfile, p: MlaDecodeAttention) -> float:
        return floor_s(profile, p)

    def flops(self, p: MlaDecodeAttention) -> float:
        return p.flops

    def no_kernel(self, p: MlaDecodeAttention, dtype: str, profile: SocProfile) -> str | None:
        why = problem_reason(p, dtype, profile)
        return None if why is None else f"MLA decode attention: {why}"

    def render(self, p: MlaDecodeAttention, dtype: str, config: Mapping[str, Any],
               profile: SocProfile, info: ExportInfo | None) -> tuple[str, str]:
        try:
            args = mla_args(p, config, dtype, profile)
        except CatlassArgError as exc:
            raise ExportError(f"MLA decode attention: {exc}") from None
        text = render_mla_header(args, provenance(info, config, dtype, profile.soc))
        missing = [c.param for c in args.counterparts if not c.matches]
        note = f"; no catlass counterpart: {', '.join(missing)}" if missing else ""
        return text, f"catlass MLA decode (examples/19_mla) instantiation{note}"

    def npu_program(self, p: MlaDecodeAttention, dtype: str, config: Mapping[str, Any],
                    profile: SocProfile, target: NpuTarget) -> KernelProgram:
        return mla_program(p, config, dtype, profile, target,
                           provenance(None, config, dtype, profile.soc))


KIND = MlaAttentionKind()
