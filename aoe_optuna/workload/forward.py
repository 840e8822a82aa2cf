"""Every GEMM of one forward step of an :class:`Architecture` on one card of a ``tp`` group,
and the time of what the tiling does not change.

Tensor parallelism (Megatron style): column-parallel GEMMs (QKV, gate+up,
lm_head, the experts' gate+up) split N by ``tp``; row-parallel ones (O, down)
split K and are followed by an all-reduce of the activations, two per layer.
Experts are tensor-parallel too (each card holds 1/tp of every expert), so
there is no all-to-all. Prefill computes logits for the last token of each
sequence only (lm_head has ``batch`` rows), as serving engines do. Attention,
norms and activations are charged as HBM traffic; attention in prefill also
as cube work. A caller may pass
``attention_model`` (e.g. the simulator's attention models at CANN's
default tiling) to charge decode attention (GQA/MQA, or MLA's absorbed form
over the latent cache) and causal prefill attention (MLA's with a narrower V)
with it instead of the roofline; without one every figure stays at the
roofline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection

from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.layer_problem import LayerProblem
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.architecture import Architecture, Experts, LatentAttention
from aoe_optuna.workload.gemm import Gemm, Workload
from aoe_optuna.workload.moe_gating import step_gating
from aoe_optuna.workload.step_operators import LayerOpCall
from aoe_optuna.workload.vector_ops import step_vector_ops

PHASES = ("decode", "prefill")


def routed_rows(tokens: int, per_token: int, experts: int) -> tuple[int, int]:
    """(active experts, rows per active expert) that a uniform router gives on average.

    Each of ``tokens`` tokens picks ``per_token`` of ``experts`` experts; an
    expert is left idle with probability (1 - k/E)^T, so E(1 - (1 - k/E)^T)
    experts are active and each gets T*k / active rows (rounded up).
    """
    active = experts * (1.0 - (1.0 - per_token / experts) ** tokens)
    rows = math.ceil(tokens * per_token / active - 1e-9)
    return max(1, min(experts, round(active))), max(1, rows)


def check_tp(arch: Architecture, tp: int) -> None:
    """Refuse a ``tp`` that does not divide the widths it splits."""
    widths = [arch.q_heads * arch.head_dim, arch.kv_heads * arch.head_dim, arch.vocab]
    if arch.dense_layers:
        widths.append(arch.intermediate)
    if arch.experts is not None:
        widths += [arch.experts.intermediate, arch.experts.shared_intermediate]
    if arch.mla is not None:
        widths.append(arch.q_heads)
    if tp < 1 or any(w % tp for w in widths):
        raise ValueError(f"tp: {tp} does not divide the model's heads and widths")


def forward_workload(
    profile: SocProfile,
    arch: Architecture,
    phase: str = "decode",
    batch: int = 1,
    seq_len: int = 1024,
    tp: int = 1,
    dtype: str = "fp16",
    attention_model: Callable[[AttentionShape], float] | None = None,
    vector_model: Callable[[LayerProblem], float] | None = None,
    tuned: Collection[str] = (),
) -> Workload:
    """The forward step of ``arch``: decode (one new token per sequence) or prefill.

    ``attention_model`` gives the seconds of one layer's attention call (a
    :class:`DecodeAttention`, for MLA an :class:`MlaDecodeAttention`, or, in
    prefill, a causal :class:`PrefillAttention`); None charges it at the roofline.
    ``vector_model`` likewise gives the seconds of one vector kernel (norms,
    SwiGLU, rope: :func:`step_vector_ops`; a MoE layer's gating:
    :func:`~aoe_optuna.workload.moe_gating.step_gating`); None charges them at the
    roofline.
    ``tuned`` names the parts (``attention``, ``vector``) whose calls the workload
    lists in ``layer_ops``, each with its model's charge, for an operator run to
    tune; a part needs its model.
    """
    if phase not in PHASES:
        raise ValueError(f"phase: expected 'decode' or 'prefill', got {phase!r}")
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype: expected one of {list(DTYPE_BYTES)}, got {dtype!r}")
    check_tp(arch, tp)
    m = batch if phase == "decode" else batch * seq_len
    h, layers = arch.hidden, arch.layers
    details: dict[str, float] = {}
    layer_ops: list[LayerOpCall] = []
    gemms = _attention_gemms(arch, m, batch, phase, tp, dtype)
    if arch.dense_layers:
        inter = arch.intermediate
        gemms += [Gemm(m, h, 2 * inter // tp, dtype, "gate_up_proj", arch.dense_layers),
                  Gemm(m, inter // tp, h, dtype, "down_proj", arch.dense_layers)]
    if arch.experts is not None:
        gemms += _expert_gemms(arch.experts, h, m, tp, dtype, details)
    # Serving engines compute logits for the last token of each sequence only.
    gemms.append(Gemm(batch, h, arch.vocab // tp, dtype, "lm_head", 1))

    b = DTYPE_BYTES[dtype]
    bw = profile.hbm_bandwidth()
    attention_s = _attention_s(profile, arch, phase, batch, seq_len, tp, dtype)
    if attention_model is not None:
        details["attention_roofline_s"] = attention_s
        attention_s = 0.0
        for window, n in arch.attention_spans(seq_len):
            shape = attention_shape(arch, phase, batch, seq_len, tp, dtype, window)
            per_call = attention_model(shape)
            attention_s += n * per_call
            if "attention" in tuned:
                name = "attention" if window is None else "sliding_attention"
                layer_ops.append(LayerOpCall(name, shape, dtype, n, per_call))
    # RMSNorm x2, SwiGLU, residual adds: a few reads and writes of the activations.
    act_bytes = arch.dense_layers * m * b * (4 * h + 3 * arch.intermediate // tp) * 2
    if arch.experts is not None:
        e = arch.experts
        width = e.per_token * e.intermediate + e.shared_intermediate
        act_bytes += arch.moe_layers * m * b * (4 * h + 3 * width // tp) * 2
    # Gemma's norms of the attention and MLP outputs; Qwen3's per-head Q/K norms.
    extra = (2 * h if arch.post_norms else 0) + (
        (arch.q_heads + max(arch.kv_heads, tp)) * arch.head_dim // tp if arch.qk_norm else 0)
    act_bytes += layers * m * b * extra * 2
    # Vector kernels with a roofline of their own, beside the activations' traffic above.
    own = step_gating(arch, phase, batch, seq_len, dtype)
    elementwise_s = act_bytes / bw + sum(n * op.roofline_s(profile) for op, n in own)
    if vector_model is not None:
        details["elementwise_roofline_s"] = elementwise_s
        calls = [(op, n, vector_model(op))
                 for op, n in step_vector_ops(arch, phase, batch, seq_len, tp, dtype) + own]
        elementwise_s = sum(n * seconds for _, n, seconds in calls)
        if "vector" in tuned:
            layer_ops += _vector_calls(calls, dtype)
    comm_s = 0.0
    if tp > 1:
        per_allreduce = 2 * (tp - 1) / tp * m * h * b / (profile.interconnect_gbs * 1e9)
        comm_s = 2 * layers * (per_allreduce + profile.interconnect_latency_us * 1e-6)
    tokens = batch if phase == "decode" else batch * seq_len
    return Workload(
        name=f"{arch.name} {phase} batch={batch} seq_len={seq_len} tp={tp} {dtype}",
        gemms=tuple(gemms),
        tokens_per_step=tokens,
        fixed_s=attention_s + elementwise_s + comm_s,
        details={"attention_s": attention_s, "elementwise_s": elementwise_s, "comm_s": comm_s,
                 **details},
        layer_ops=tuple(layer_ops),
    )


def _vector_calls(calls: list[tuple[LayerProblem, int, float]],
                  dtype: str) -> list[LayerOpCall]:
    """Each vector kernel as a layer operator named by its kind (``swiglu_2`` for a
    second SwiGLU of another width: a model with dense and MoE layers)."""
    out: list[LayerOpCall] = []
    seen: dict[str, int] = {}
    for op, n, seconds in calls:
        seen[op.kind] = seen.get(op.kind, 0) + 1
        name = op.kind if seen[op.kind] == 1 else f"{op.kind}_{seen[op.kind]}"
        out.append(LayerOpCall(name, op, dtype, n, seconds))
    return out


AttentionShape = DecodeAttention | MlaDecodeAttention | PrefillAttention


def attention_shape(arch: Architecture, phase: str, batch: int, seq_len: int, tp: int,
                    dtype: str, window: int | None = None) -> AttentionShape:
    """One layer's attention call on one card in ``phase`` (``window``: a sliding
    layer's; MLA models have none)."""
    if arch.mla is not None:
        if phase == "decode":
            return mla_decode_attention_shape(arch, arch.mla, batch, seq_len, tp, dtype)
        return mla_prefill_attention_shape(arch, arch.mla, batch, seq_len, tp, dtype)
    if phase == "decode":
        return decode_attention_shape(arch, batch, seq_len, tp, dtype, window)
    return prefill_attention_shape(arch, batch, seq_len, tp, dtype, window)


def mla_decode_attention_shape(arch: Architecture, mla: LatentAttention, batch: int,
                               seq_len: int, tp: int, dtype: str) -> MlaDecodeAttention:
    """MLA decode as serving engines run it (absorbed): this card's Q heads over the latent
    cache, which every card holds whole."""
    return MlaDecodeAttention(batch=batch, q_heads=arch.q_heads // tp, context=seq_len,
                              kv_lora_rank=mla.kv_lora_rank,
                              qk_rope_head_dim=mla.qk_rope_head_dim,
                              dtype_bytes=DTYPE_BYTES[dtype])


def mla_prefill_attention_shape(arch: Architecture, mla: LatentAttention, batch: int,
                                seq_len: int, tp: int, dtype: str) -> PrefillAttention:
    """MLA prefill (not absorbed: ``kv_b_proj`` expands the latent): causal MHA over this
    card's heads, QK^T over the nope and rope parts (192), PV over ``v_head_dim`` (128)."""
    heads = arch.q_heads // tp
    return PrefillAttention(batch=batch, q_heads=heads, kv_heads=heads,
                            head_dim=mla.qk_head_dim, seq_len=seq_len, causal=True,
                            dtype_bytes=DTYPE_BYTES[dtype], v_head_dim=mla.v_head_dim)


def decode_attention_shape(arch: Architecture, batch: int, seq_len: int, tp: int,
                           dtype: str, window: int | None = None) -> DecodeAttention:
    """One layer's decode attention on one card: its share of the Q heads and KV heads.

    A model with fewer KV heads than ``tp`` replicates them, one per card. A
    sliding-window layer reads the last ``window`` keys only.
    """
    if arch.kv_heads >= tp:
        kv_heads = math.ceil(arch.kv_heads / tp)
        q_heads = kv_heads * (arch.q_heads // arch.kv_heads)
    else:
        kv_heads, q_heads = 1, math.ceil(arch.q_heads / tp)
    return DecodeAttention(batch=batch, q_heads=q_heads, kv_heads=kv_heads,
                           head_dim=arch.head_dim,
                           context=seq_len if window is None else min(seq_len, window),
                           dtype_bytes=DTYPE_BYTES[dtype])


def prefill_attention_shape(arch: Architecture, batch: int, seq_len: int, tp: int,
                            dtype: str, window: int | None = None) -> PrefillAttention:
    """One layer's causal prefill attention on one card, heads shared out as in decode;
    a sliding-window layer's rows see their last ``window`` keys (when shorter than
    the sequence)."""
    d = decode_attention_shape(arch, batch, seq_len, tp, dtype)
    return PrefillAttention(batch=batch, q_heads=d.q_heads, kv_heads=d.kv_heads,
                            head_dim=d.head_dim, seq_len=seq_len, causal=True,
                            dtype_bytes=d.dtype_bytes,
                            window=window if window is not None and window < seq_len else None)


def _attention_gemms(arch: Architecture, m: int, batch: int, phase: str, tp: int,
                     dtype: str) -> list[Gemm]:
    h, layers = arch.hidden, arch.layers
    if arch.mla is None:
        qd, kvd = arch.q_heads * arch.head_dim, arch.kv_heads * arch.head_dim
        return [Gemm(m, h, (qd + 2 * kvd) // tp, dtype, "qkv_proj", layers),
                Gemm(m, qd // tp, h, dtype, "o_proj", layers)]
    return _latent_attention_gemms(arch.mla, arch, m, batch, phase, tp, dtype)


def _latent_attention_gemms(mla: LatentAttention, arch: Architecture, m: int, batch: int,
                            phase: str, tp: int, dtype: str) -> list[Gemm]:
    """MLA's projections. The down-projections (q_a, kv_a) are replicated on every card.

    Prefill expands the latent KV with ``kv_b_proj``; decode absorbs it into Q
    and O instead, as inference engines do to keep the cache compressed: one
    batched matmul per layer over the local heads (each head its own weight),
    one launch whose blocks fill the cores together, not one launch per head.
    """
    h, layers, heads = arch.hidden, arch.layers, arch.q_heads // tp
    out: list[Gemm] = []
    if mla.q_lora_rank:
        out += [Gemm(m, h, mla.q_lora_rank, dtype, "q_a_proj", layers),
                Gemm(m, mla.q_lora_rank, heads * mla.qk_head_dim, dtype, "q_b_proj", layers)]
    else:
        out.append(Gemm(m, h, heads * mla.qk_head_dim, dtype, "q_proj", layers))
    out.append(Gemm(m, h, mla.kv_lora_rank + mla.qk_rope_head_dim, dtype, "kv_a_proj", layers))
    if phase == "prefill":
        n = heads * (mla.qk_nope_head_dim + mla.v_head_dim)
        out.append(Gemm(m, mla.kv_lora_rank, n, dtype, "kv_b_proj", layers))
    else:
        out += [Gemm(batch, mla.qk_nope_head_dim, mla.kv_lora_rank, dtype, "q_absorb",
                     layers, batch=heads),
                Gemm(batch, mla.kv_lora_rank, mla.v_head_dim, dtype, "o_absorb",
                     layers, batch=heads)]
    out.append(Gemm(m, heads * mla.v_head_dim, h, dtype, "o_proj", layers))
    return out


def _expert_gemms(e: Experts, h: int, m: int, tp: int, dtype: str,
                  details: dict[str, float]) -> list[Gemm]:
    """Router, routed experts as grouped GEMMs of the average rows, shared experts."""
    n_layers = len(e.layers)
    active, rows = routed_rows(m, e.per_token, e.routed)
    details.update(active_experts=float(active), rows_per_expert=float(rows))
    out = [Gemm(m, h, e.routed, dtype, "router", n_layers),
           Gemm(rows, h, 2 * e.intermediate // tp, dtype, "experts_gate_up_proj",
                active * n_layers),
           Gemm(rows, e.intermediate // tp, h, dtype, "experts_down_proj", active * n_layers)]
    if e.shared_intermediate:
        s = e.shared_intermediate
        out += [Gemm(m, h, 2 * s // tp, dtype, "shared_gate_up_proj", n_layers),
                Gemm(m, s // tp, h, dtype, "shared_down_proj", n_layers)]
        if e.shared_gate:
            out.append(Gemm(m, h, 1, dtype, "shared_expert_gate", n_layers))
    return out


def _attention_s(profile: SocProfile, arch: Architecture, phase: str, batch: int,
                 seq_len: int, tp: int, dtype: str) -> float:
    """Attention proper: read the KV cache (decode) or Q/K/V and write O (prefill)."""
    b = DTYPE_BYTES[dtype]
    bw = profile.hbm_bandwidth()
    kv_len = seq_len
    layers = arch.layers
    causal = 1 if phase == "decode" else seq_len / 2
    if arch.mla is None:
        # This card's heads, as the attention call gets them: fewer KV heads than tp
        # are replicated, one per card, not split.
        card = decode_attention_shape(arch, batch, seq_len, tp, dtype)
        kv_width = card.kv_heads * arch.head_dim
        kv_bytes = attn_flops = 0.0
        for window, n in arch.attention_spans(seq_len):
            w = seq_len if window is None else window
            # Decode reads the window's keys; prefill reads each key once and keeps
            # (query, key) pairs within the window of each row.
            kv_bytes += 2 * batch * (w if phase == "decode" else seq_len) * kv_width * b * n
            pairs = w if phase == "decode" else (
                seq_len * seq_len / 2 if window is None else w * seq_len - w * w / 2)
            attn_flops += 4.0 * batch * card.q_heads * arch.head_dim * pairs * n
    else:
        mla = arch.mla
        # The compressed cache (latent + rope key) is replicated on every card.
        kv_bytes = batch * kv_len * (mla.kv_lora_rank + mla.qk_rope_head_dim) * b * layers
        attn_flops = (2.0 * batch * (arch.q_heads // tp) * (mla.qk_head_dim + mla.v_head_dim)
                      * kv_len * causal * layers)
    return max(kv_bytes / bw, attn_flops / profile.peak_flops(dtype))
