"""The shared step builder: the built-in table gives today's workload bit for bit, and a
Hugging Face config of the same model gives the same GEMMs."""

from __future__ import annotations

import itertools

import pytest

from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.workload.gemm import Gemm, Workload
from aoe_optuna.workload.hf_config import read_hf_config
from aoe_optuna.workload.models import QWEN25_7B, builtin_architecture, model_workload

from .conftest import MODELS_DIR


# The step builder as it was before the table and HF configs shared one code path,
# kept verbatim so that any drift of the built-in workload is caught.
def reference_model_workload(
    profile: SocProfile,
    model: str = "qwen2.5-7b",
    phase: str = "decode",
    batch: int = 1,
    seq_len: int = 1024,
    tp: int = 1,
    dtype: str = "fp16",
) -> Workload:
    """Every GEMM of one forward step of ``model`` on one device of a ``tp`` group.

    Column-parallel GEMMs (QKV, gate+up, lm_head) split N by ``tp``; row-parallel
    ones (O, down) split K and are followed by an all-reduce of the activations.
    lm_head computes logits for the last token of each sequence only. Attention,
    norms and activations are charged as HBM traffic (they do not depend on the
    GEMM tiling); attention in prefill also as cube work.
    """
    if phase not in ("decode", "prefill"):
        raise ValueError(f"phase: expected 'decode' or 'prefill', got {phase!r}")
    cfg = QWEN25_7B
    h, inter, layers = cfg["hidden"], cfg["intermediate"], cfg["layers"]
    qd, kvd = cfg["q_heads"] * cfg["head_dim"], cfg["kv_heads"] * cfg["head_dim"]
    if tp < 1 or qd % tp or kvd % tp or inter % tp or cfg["vocab"] % tp:
        raise ValueError(f"tp: {tp} does not divide the model's heads and widths")
    m = batch if phase == "decode" else batch * seq_len
    b = DTYPE_BYTES[dtype]
    gemms = (
        Gemm(m, h, (qd + 2 * kvd) // tp, dtype, "qkv_proj", layers),
        Gemm(m, qd // tp, h, dtype, "o_proj", layers),
        Gemm(m, h, 2 * inter // tp, dtype, "gate_up_proj", layers),
        Gemm(m, inter // tp, h, dtype, "down_proj", layers),
        Gemm(batch, h, cfg["vocab"] // tp, dtype, "lm_head", 1),  # last token only
    )
    bw = profile.hbm_bandwidth()
    # Attention: read the KV cache (decode) or Q/K/V and write O (prefill).
    kv_len = seq_len
    kv_bytes = 2 * batch * kv_len * (kvd // tp) * b * layers
    attn_flops = 4.0 * batch * cfg["q_heads"] // tp * cfg["head_dim"] * kv_len * (
        1 if phase == "decode" else seq_len / 2
    ) * layers
    attention_s = max(kv_bytes / bw, attn_flops / profile.peak_flops(dtype))
    # RMSNorm x2, SwiGLU, residual adds: a few reads and writes of the activations.
    act_bytes = layers * m * b * (4 * h + 3 * inter // tp) * 2
    elementwise_s = act_bytes / bw
    comm_s = 0.0
    if tp > 1:
        per_allreduce = 2 * (tp - 1) / tp * m * h * b / (profile.interconnect_gbs * 1e9)
        comm_s = 2 * layers * (per_allreduce + profile.interconnect_latency_us * 1e-6)
    tokens = batch if phase == "decode" else batch * seq_len
    return Workload(
        name=f"{model} {phase} batch={batch} seq_len={seq_len} tp={tp} {dtype}",
        gemms=gemms,
        tokens_per_step=tokens,
        fixed_s=attention_s + elementwise_s + comm_s,
        details={"attention_s": attention_s, "elementwise_s": elementwise_s, "comm_s": comm_s},
    )


GRID = list(itertools.product(("decode", "prefill"), (1, 3, 64), (128, 1024), (1, 2, 4),
                              ("fp16", "bf16", "int8")))


@pytest.mark.parametrize(("phase", "batch", "seq_len", "tp", "dtype"), GRID)
def test_builtin_model_is_bit_for_bit_the_old_workload(profile, phase, batch, seq_len, tp,
                                                         dtype):
    new = model_workload(profile, "qwen2.5-7b", phase, batch, seq_len, tp, dtype)
    old = reference_model_workload(profile, "qwen2.5-7b", phase, batch, seq_len, tp, dtype)
    assert new == old  # every GEMM, fixed_s and each detail compared with ==, not approx
    assert new.fixed_s.hex() == old.fixed_s.hex()


@pytest.mark.parametrize(("phase", "batch", "tp"), [("decode", 1, 1), ("decode", 16, 4),
                                                     ("prefill", 2, 2)])
def test_hf_config_of_qwen25_7b_gives_the_builtin_workload(profile, phase, batch, tp):
    arch, _ = read_hf_config(MODELS_DIR / "qwen2.5-7b-instruct.json")
    hf = model_workload(profile, arch, phase, batch, 512, tp)
    builtin = model_workload(profile, "qwen2.5-7b", phase, batch, 512, tp)
    assert hf.gemms == builtin.gemms
    assert hf.fixed_s == builtin.fixed_s and hf.details == builtin.details
    assert hf.name.startswith("qwen2.5-7b-instruct decode" if phase == "decode" else
                              "qwen2.5-7b-instruct prefill")


def test_attention_roofline_reads_the_kv_heads_a_card_holds(profile) -> None:
    """At tp 8 Qwen2.5-7B's 4 KV heads are replicated, one per card, not split: each card
    reads one whole KV head per layer (and its 4 Q heads), as the attention call it runs."""
    arch = builtin_architecture("qwen2.5-7b")
    wl = model_workload(profile, arch, "decode", batch=1, seq_len=32768, tp=8)
    one_head = 2 * 32768 * arch.head_dim * 2 * arch.layers  # K and V, fp16
    assert wl.details["attention_s"] == pytest.approx(one_head / profile.hbm_bandwidth())
    four = model_workload(profile, arch, "decode", batch=1, seq_len=32768, tp=4)
    assert wl.details["attention_s"] == pytest.approx(four.details["attention_s"])
