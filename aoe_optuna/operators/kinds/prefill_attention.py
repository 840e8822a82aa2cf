"""Prefill attention (causal or full, a sliding window, cached keys, MLA's narrower
V) as an operator kind: PromptFlashAttention's tiling tuned per problem.

Parts: the problem and its tiling rules, CANN's default (PromptFlashAttention's)
in :mod:`aoe_optuna.space.prefill_attention`; the space in
:mod:`aoe_optuna.space.prefill_attention_space`; the model, roofline and floor in
:mod:`aoe_optuna.aicore.attention.prefill_attention`;
the knowledge base's op and problem fields on the problem (``KB_OP``,
``KB_FIELDS``); the kernel in
:mod:`.attention_render`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aoe_optuna.aicore.attention.prefill_attention import floor_s, prefill_attention_cost
from aoe_optuna.aicore.attention.prefill_attention import roofline_s as model_roofline_s
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.export.kernel_source import ExportInfo
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.operators.kinds.attention_render import (
    fai_problem_reason,
    fai_program_for,
    render_fai,
)
from aoe_optuna.space.prefill_attention import PrefillAttention, cann_default_tiling
from aoe_optuna.space.prefill_attention_space import (
    config_of,
    prefill_attention_space,
    tiling_of,
)
from aoe_optuna.space.search_space import SearchSpace


class PrefillAttentionKind:
    name = PrefillAttention.KB_OP
    part = "attention"
    problem_type = PrefillAttention
    ops = (PrefillAttention.KB_OP,)
    plan_kinds = ()
    names_op_in_plan = True
    seeded = True  # with or without the causal mask: a family each
    kernel_suffix = ".h"

    def label(self, p: PrefillAttention) -> str:
        return "attention"

    def op_name(self, p: PrefillAttention) -> str:
        return PrefillAttention.KB_OP

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
        return PrefillAttention(dtype_bytes=DTYPE_BYTES[dtype], **fields)

    def space(self, profile: SocProfile, p: PrefillAttention) -> SearchSpace:
        return prefill_attention_space(profile, p)

    def default_config(self, profile: SocProfile, p: PrefillAttention) -> dict[str, Any]:
        return config_of(cann_default_tiling(profile, p))

    def model(self, profile: SocProfile,
              p: PrefillAttention) -> Callable[[Mapping[str, Any]], float]:
        return lambda c: prefill_attention_cost(profile, p, tiling_of(c)).total_s

    def roofline_s(self, profile: SocProfile, p: PrefillAttention) -> float:
        return model_roofline_s(profile, p)

    def bound_s(self, profile: SocProfile, p: PrefillAttention) -> float:
        return floor_s(profile, p)

    def flops(self, p: PrefillAttention) -> float:
        return p.flops

    def no_kernel(self, p: PrefillAttention, dtype: str, profile: SocProfile) -> str | None:
        return fai_problem_reason("prefill", p, dtype, profile)

    def render(self, p: PrefillAttention, dtype: str, config: Mapping[str, Any],
               profile: SocProfile, info: ExportInfo | None) -> tuple[str, str]:
        return render_fai("prefill", p, dtype, config, profile, info)

    def npu_program(self, p: PrefillAttention, dtype: str, config: Mapping[str, Any],
                    profile: SocProfile, target: NpuTarget) -> KernelProgram:
        return fai_program_for(p, dtype, config, profile, target)


KIND = PrefillAttentionKind()
