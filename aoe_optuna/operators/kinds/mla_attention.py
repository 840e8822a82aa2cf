"""MLA decode attention (DeepSeek's latent KV) as an operator kind: catlass's MLA
example's tiling tuned per problem.

Parts: the problem and its tiling rules, catlass's default in
:mod:`aoe_optuna.space.mla_attention`; the space in
:mod:`aoe_optuna.space.mla_attention_space`; the model, roofline and floor in
:mod:`aoe_optuna.aicore.attention.mla_attention`;
the knowledge base's op and problem fields on the problem (``KB_OP``,
``KB_FIELDS``); the kernel (catlass's ``examples/19_mla`` instantiated) and its host
program in :mod:`aoe_optuna.backends.npu.catlass.mla`; what every attention kind
answers alike in :mod:`.attention`.
"""

from __future__ import annotations

from typing import Any

from aoe_optuna.aicore.attention.mla_attention import floor_s, mla_attention_cost, roofline_s
from aoe_optuna.backends.npu.catlass.mla import (
    mla_args,
    mla_program,
    problem_reason,
    render_mla_header,
)
from aoe_optuna.operators.kinds.attention import AttentionKind, AttentionParts, CatlassKernel
from aoe_optuna.space.mla_attention import MlaDecodeAttention, catlass_default_tiling
from aoe_optuna.space.mla_attention_space import config_of, mla_attention_space, tiling_of


class MlaAttentionKind(AttentionKind):
    problem_type = MlaDecodeAttention
    seeded = False  # no family: it takes and gives no seeds
    parts = AttentionParts(space=mla_attention_space, default_tiling=catlass_default_tiling,
                           config_of=config_of, tiling_of=tiling_of,
                           cost=mla_attention_cost, roofline_s=roofline_s, floor_s=floor_s)
    kernel = CatlassKernel(
        title="MLA decode attention", problem_reason=problem_reason, args=mla_args,
        header=render_mla_header, program=mla_program,
        what=lambda a: "catlass MLA decode (examples/19_mla) instantiation")

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


KIND = MlaAttentionKind()
