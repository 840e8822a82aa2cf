"""Decode attention (paged KV, GQA) as an operator kind: IncreFlashAttention's
tiling tuned per problem.

Parts: the problem and its tiling rules, CANN's default (IncreFlashAttention's
host rules) in :mod:`aoe_optuna.space.decode_attention`; the space in
:mod:`aoe_optuna.space.attention_space`; the model, roofline and floor in
:mod:`aoe_optuna.aicore.attention.decode_attention`;
the knowledge base's op and problem fields on the problem (``KB_OP``,
``KB_FIELDS``); the kernel, catlass's flash-attention-infer, and what every
attention kind answers alike in :mod:`.attention`.
"""

from __future__ import annotations

from typing import Any

from aoe_optuna.aicore.attention.decode_attention import (
    decode_attention_cost,
    floor_s,
    roofline_s,
)
from aoe_optuna.operators.kinds.attention import AttentionKind, AttentionParts, fai_kernel
from aoe_optuna.space.attention_space import attention_space, config_of, tiling_of
from aoe_optuna.space.decode_attention import DecodeAttention, cann_default_tiling


class DecodeAttentionKind(AttentionKind):
    problem_type = DecodeAttention
    plan_kinds = ("attention",)  # its plans name no op: they predate the other attention kinds
    names_op_in_plan = False
    seeded = True  # a tiling carries over, its KV split scaled with the context
    parts = AttentionParts(space=attention_space, default_tiling=cann_default_tiling,
                           config_of=config_of, tiling_of=tiling_of,
                           cost=decode_attention_cost, roofline_s=roofline_s, floor_s=floor_s)
    kernel = fai_kernel("decode")

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


KIND = DecodeAttentionKind()
