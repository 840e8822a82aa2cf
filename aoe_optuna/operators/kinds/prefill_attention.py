"""Prefill attention (causal or full, a sliding window, cached keys, MLA's narrower
V) as an operator kind: PromptFlashAttention's tiling tuned per problem.

Parts: the problem and its tiling rules, CANN's default (PromptFlashAttention's)
in :mod:`aoe_optuna.space.prefill_attention`; the space in
:mod:`aoe_optuna.space.prefill_attention_space`; the model, roofline and floor in
:mod:`aoe_optuna.aicore.attention.prefill_attention`;
the knowledge base's op and problem fields on the problem (``KB_OP``,
``KB_FIELDS``); the kernel, catlass's flash-attention-infer, and what every
attention kind answers alike in :mod:`.attention`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aoe_optuna.aicore.attention.prefill_attention import (
    floor_s,
    prefill_attention_cost,
    roofline_s,
)
from aoe_optuna.operators.kinds.attention import AttentionKind, AttentionParts, fai_kernel
from aoe_optuna.space.prefill_attention import PrefillAttention, cann_default_tiling
from aoe_optuna.space.prefill_attention_space import (
    config_of,
    prefill_attention_space,
    tiling_of,
)


class PrefillAttentionKind(AttentionKind):
    problem_type = PrefillAttention
    seeded = True  # with or without the causal mask: a family each
    parts = AttentionParts(space=prefill_attention_space, default_tiling=cann_default_tiling,
                           config_of=config_of, tiling_of=tiling_of,
                           cost=prefill_attention_cost, roofline_s=roofline_s, floor_s=floor_s)
    kernel = fai_kernel("prefill")

    def dims(self, p: PrefillAttention) -> str:
        """``prefill-b1-q28-kv4-d128-s4096``; ``-v<width>`` when V is narrower,
        ``-k<keys>`` when keys are cached, ``-w<window>`` for a sliding window,
        ``-full`` without the causal mask."""
        text = f"prefill-b{p.batch}-q{p.q_heads}-kv{p.kv_heads}-d{p.head_dim}-s{p.seq_len}"
        if p.v_head_dim is not None:
            text += f"-v{p.v_head_dim}"
        if p.keys != p.seq_len:
            text += f"-k{p.keys}"
        if p.window is not None:
            text += f"-w{p.window}"
        if not p.causal:
            text += "-full"
        return text

    def problem_doc(self, p: PrefillAttention) -> dict[str, Any]:
        doc = {"batch": p.batch, "q_heads": p.q_heads, "kv_heads": p.kv_heads,
               "head_dim": p.head_dim, "seq_len": p.seq_len, "kv_len": p.keys,
               "causal": p.causal}
        if p.window is not None:  # absent otherwise: older entries keep their key
            doc["window"] = p.window
        if p.v_head_dim is not None:  # keyed only where V is narrower: older keys hold
            doc["v_head_dim"] = p.v_head_dim
        return doc

    def from_doc(self, doc: Mapping[str, Any], label: str, dtype: str) -> PrefillAttention:
        fields = dict(doc)
        if fields["kv_len"] == fields["seq_len"]:
            fields["kv_len"] = None  # a plain prefill, as workload.forward builds it
        return super().from_doc(fields, label, dtype)


KIND = PrefillAttentionKind()
