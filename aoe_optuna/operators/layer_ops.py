"""Attention and the vector kernels as operators of a run, beside the GEMM shapes.

Each distinct problem (one decode, MLA decode or prefill attention shape; one vector kernel's kind,
rows, width and dtype) is an operator with a study of its own, named like a
GEMM shape's (``<study>/attention/<dims>``, ``<study>/rmsnorm/<dims>``): its
search space is the problem's tiling space with its rules (an infeasible
tiling is never measured), its measurement the simulator's model of the
kernel, its baseline the CANN-style default tiling (IncreFlashAttention's for
decode, catlass's MLA example's for MLA decode, PromptFlashAttention's for
prefill), and its weight its calls
per step. Only the simulator models these kernels: a run on another backend
is refused before anything is written (:func:`check_backend`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aoe_optuna.backends.simulator.decode_attention import decode_attention_cost
from aoe_optuna.backends.simulator.decode_attention import floor_s as attention_floor_s
from aoe_optuna.backends.simulator.decode_attention import roofline_s as attention_roofline_s
from aoe_optuna.backends.simulator.mla_attention import floor_s as mla_floor_s
from aoe_optuna.backends.simulator.mla_attention import mla_attention_cost
from aoe_optuna.backends.simulator.mla_attention import roofline_s as mla_roofline_s
from aoe_optuna.backends.simulator.prefill_attention import floor_s as prefill_floor_s
from aoe_optuna.backends.simulator.prefill_attention import prefill_attention_cost
from aoe_optuna.backends.simulator.prefill_attention import roofline_s as prefill_roofline_s
from aoe_optuna.backends.simulator.vector_ops import floor_s as vector_floor_s
from aoe_optuna.backends.simulator.vector_ops import vector_op_cost
from aoe_optuna.export.kb import ATTENTION_OP, MLA_ATTENTION_OP, PREFILL_ATTENTION_OP
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.attention_space import attention_space, config_of, tiling_of
from aoe_optuna.space.decode_attention import DecodeAttention, cann_default_tiling
from aoe_optuna.space.mla_attention import MlaDecodeAttention, catlass_default_tiling
from aoe_optuna.space.mla_attention_space import config_of as mla_config_of
from aoe_optuna.space.mla_attention_space import mla_attention_space
from aoe_optuna.space.mla_attention_space import tiling_of as mla_tiling_of
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.space.prefill_attention import cann_default_tiling as prefill_default_tiling
from aoe_optuna.space.prefill_attention_space import config_of as prefill_config_of
from aoe_optuna.space.prefill_attention_space import prefill_attention_space
from aoe_optuna.space.prefill_attention_space import tiling_of as prefill_tiling_of
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.models import Workload
from aoe_optuna.workload.vector_ops import VectorOp
from aoe_optuna.workload.vector_space import default_config as vector_default_config
from aoe_optuna.workload.vector_space import vector_space

MODELLED_BY = "simulator"  # the one backend whose models time these kernels
Problem = DecodeAttention | MlaDecodeAttention | PrefillAttention | VectorOp


@dataclass(frozen=True)
class LayerOperator:
    """One distinct non-GEMM problem of a workload and the calls that run it."""

    problem: Problem
    dtype: str
    names: tuple[str, ...]  # the workload's layer-op names of this problem
    weight: int  # calls per step: the sum of their counts

    @property
    def kind(self) -> str:
        """``attention`` or the vector kernel's kind (``add_rmsnorm``, ``swiglu``...)."""
        if isinstance(self.problem, VectorOp):
            return self.problem.kind
        return "attention"

    @property
    def op_name(self) -> str:
        """The knowledge base's op: ``decode_attention``, ``mla_decode_attention``,
        ``prefill_attention``, or the vector kernel's kind."""
        if isinstance(self.problem, PrefillAttention):
            return PREFILL_ATTENTION_OP
        if isinstance(self.problem, MlaDecodeAttention):
            return MLA_ATTENTION_OP
        return ATTENTION_OP if self.kind == "attention" else self.kind

    @property
    def key(self) -> tuple[Problem, str]:
        return (self.problem, self.dtype)

    @property
    def label(self) -> str:
        return self.kind + (f"+{len(self.names) - 1}" if len(self.names) > 1 else "")

    @property
    def dims(self) -> str:
        """``b1-q28-kv4-d128-s1024`` (decode attention; ``-p<page>`` and the layout when
        not the defaults), ``mla-b1-q16-l512-r64-s1024`` (MLA decode: latent rank and rope
        width; ``-p<page>`` when not 128), ``prefill-b1-q28-kv4-d128-s4096`` (prefill
        attention; ``-v<width>`` when V is narrower, ``-k<keys>`` when keys are cached,
        ``-w<window>`` for a sliding window, ``-full`` without the causal mask) or
        ``<rows>x<width>`` (a vector kernel), ``-<dtype>`` unless fp16."""
        suffix = "" if self.dtype == "fp16" else f"-{self.dtype}"
        p = self.problem
        if isinstance(p, PrefillAttention):
            text = f"prefill-b{p.batch}-q{p.q_heads}-kv{p.kv_heads}-d{p.head_dim}-s{p.seq_len}"
            if p.v_head_dim is not None:
                text += f"-v{p.v_head_dim}"
            if p.keys != p.seq_len:
                text += f"-k{p.keys}"
            if p.window is not None:
                text += f"-w{p.window}"
            if not p.causal:
                text += "-full"
            return text + suffix
        if isinstance(p, MlaDecodeAttention):
            text = (f"mla-b{p.batch}-q{p.q_heads}-l{p.kv_lora_rank}-r{p.qk_rope_head_dim}"
                    f"-s{p.context}")
            if p.page_tokens != 128:
                text += f"-p{p.page_tokens}"
            return text + suffix
        if isinstance(p, DecodeAttention):
            text = f"b{p.batch}-q{p.q_heads}-kv{p.kv_heads}-d{p.head_dim}-s{p.context}"
            if p.page_tokens != 128:
                text += f"-p{p.page_tokens}"
            if p.kv_layout != "BNSD":
                text += f"-{p.kv_layout}"
            return text + suffix
        return f"{p.rows}x{p.width}" + suffix

    def problem_doc(self) -> dict[str, Any]:
        """The problem as the knowledge base keys it (every field that changes the kernel)."""
        p = self.problem
        if isinstance(p, DecodeAttention):
            return {"batch": p.batch, "q_heads": p.q_heads, "kv_heads": p.kv_heads,
                    "head_dim": p.head_dim, "context": p.context,
                    "page_tokens": p.page_tokens, "kv_layout": p.kv_layout}
        if isinstance(p, MlaDecodeAttention):
            return {"batch": p.batch, "q_heads": p.q_heads, "kv_lora_rank": p.kv_lora_rank,
                    "qk_rope_head_dim": p.qk_rope_head_dim, "context": p.context,
                    "page_tokens": p.page_tokens}
        if isinstance(p, PrefillAttention):
            doc = {"batch": p.batch, "q_heads": p.q_heads, "kv_heads": p.kv_heads,
                   "head_dim": p.head_dim, "seq_len": p.seq_len, "kv_len": p.keys,
                   "causal": p.causal}
            if p.window is not None:  # absent otherwise: older entries keep their key
                doc["window"] = p.window
            if p.v_head_dim is not None:  # keyed only where V is narrower: older keys hold
                doc["v_head_dim"] = p.v_head_dim
            return doc
        doc: dict[str, Any] = {"rows": p.rows, "width": p.width}
        if p.kind == "rope":
            doc["head_dim"] = p.head_dim
        return doc

    @classmethod
    def from_plan(cls, plan: Mapping[str, Any]) -> LayerOperator:
        """The operator a plan entry (:meth:`plan_entry`) describes; a plan without an
        ``op`` (written before prefill attention was tuned) is decode's."""
        problem, dtype = dict(plan["problem"]), str(plan["dtype"])
        built: Problem
        if plan["kind"] == "attention" and plan.get("op") == PREFILL_ATTENTION_OP:
            if problem["kv_len"] == problem["seq_len"]:
                problem["kv_len"] = None  # a plain prefill, as forward.py builds it
            built = PrefillAttention(dtype_bytes=DTYPE_BYTES[dtype], **problem)
        elif plan["kind"] == "attention" and plan.get("op") == MLA_ATTENTION_OP:
            built = MlaDecodeAttention(dtype_bytes=DTYPE_BYTES[dtype], **problem)
        elif plan["kind"] == "attention":
            built = DecodeAttention(dtype_bytes=DTYPE_BYTES[dtype], **problem)
        else:
            built = VectorOp(plan["kind"], problem["rows"], problem["width"], dtype,
                             problem.get("head_dim", 128))
        return cls(built, dtype, tuple(plan["names"]), int(plan["weight"]))

    def study_name(self, parent: str) -> str:
        return f"{parent}/{self.label}/{self.dims}"

    def roofline_s(self, profile: SocProfile) -> float:
        if isinstance(self.problem, DecodeAttention):
            return attention_roofline_s(profile, self.problem)
        if isinstance(self.problem, PrefillAttention):
            return prefill_roofline_s(profile, self.problem)
        if isinstance(self.problem, MlaDecodeAttention):
            return mla_roofline_s(profile, self.problem)
        return self.problem.roofline_s(profile)

    def bound_s(self, profile: SocProfile) -> float:
        """The latency no tiling can beat in the model, launch head included: at batch 1 a
        vector kernel is almost all launch, and its roofline alone would make the
        scheduler chase a gain that no tiling gives."""
        if isinstance(self.problem, DecodeAttention):
            return attention_floor_s(profile, self.problem)
        if isinstance(self.problem, PrefillAttention):
            return prefill_floor_s(profile, self.problem)
        if isinstance(self.problem, MlaDecodeAttention):
            return mla_floor_s(profile, self.problem)
        return vector_floor_s(profile, self.problem)

    def flops(self) -> float | None:
        return None if isinstance(self.problem, VectorOp) else self.problem.flops

    def plan_entry(self, parent: str) -> dict[str, Any]:
        """What the operator's study holds. Prefill and MLA attention's name their ``op``;
        decode's and the vector kernels' do not, so studies written before prefill was
        tuned resume with the same plan."""
        plan: dict[str, Any] = {"study": self.study_name(parent), "kind": self.kind,
                                "dtype": self.dtype, "problem": self.problem_doc(),
                                "names": list(self.names), "weight": self.weight}
        if isinstance(self.problem, PrefillAttention | MlaDecodeAttention):
            plan["op"] = self.op_name
        return plan

    # ------------------------------------------------------------ its kernel
    def space(self, profile: SocProfile) -> SearchSpace:
        if isinstance(self.problem, DecodeAttention):
            return attention_space(profile, self.problem)
        if isinstance(self.problem, PrefillAttention):
            return prefill_attention_space(profile, self.problem)
        if isinstance(self.problem, MlaDecodeAttention):
            return mla_attention_space(profile, self.problem)
        return vector_space(profile, self.problem)

    def default_config(self, profile: SocProfile) -> dict[str, Any]:
        """CANN's default tiling (decode attention: IncreFlashAttention's host rules;
        MLA decode: catlass's MLA example's; prefill: PromptFlashAttention's; a vector
        kernel: every core with work, double buffered, the largest tile, fused)."""
        if isinstance(self.problem, DecodeAttention):
            return config_of(cann_default_tiling(profile, self.problem))
        if isinstance(self.problem, PrefillAttention):
            return prefill_config_of(prefill_default_tiling(profile, self.problem))
        if isinstance(self.problem, MlaDecodeAttention):
            return mla_config_of(catlass_default_tiling(profile, self.problem))
        return vector_default_config(profile, self.problem)

    def model(self, profile: SocProfile) -> Callable[[Mapping[str, Any]], float]:
        """Seconds of one call under a feasible config: the simulator's model."""
        p = self.problem
        if isinstance(p, DecodeAttention):
            return lambda c: decode_attention_cost(profile, p, tiling_of(c)).total_s
        if isinstance(p, PrefillAttention):
            return lambda c: prefill_attention_cost(profile, p, prefill_tiling_of(c)).total_s
        if isinstance(p, MlaDecodeAttention):
            return lambda c: mla_attention_cost(profile, p, mla_tiling_of(c)).total_s
        return lambda c: vector_op_cost(profile, p, dict(c)).total_s


def layer_operators(workload: Workload) -> list[LayerOperator]:
    """The distinct attention and vector problems of ``workload``, attention first, each
    kind in the order its calls first appear."""
    groups: dict[tuple[Problem, str], list[tuple[str, int]]] = {}
    for call in workload.layer_ops:
        groups.setdefault((call.problem, call.dtype), []).append((call.name, call.count))
    ops = [LayerOperator(problem, dtype, tuple(n for n, _ in calls), sum(c for _, c in calls))
           for (problem, dtype), calls in groups.items()]
    return sorted(ops, key=lambda o: o.kind != "attention")  # stable: order kept otherwise


def check_backend(backend_name: str, workload: Workload) -> None:
    """Refuse a run whose backend cannot time attention or the vector kernels."""
    if workload.layer_ops and backend_name != MODELLED_BY:
        parts = sorted({call.part for call in workload.layer_ops})
        raise ValueError(
            f"workload: {' and '.join(parts)} 'tuned' needs the {MODELLED_BY} backend (its "
            f"models time these kernels); backend {backend_name!r} times GEMMs only")
