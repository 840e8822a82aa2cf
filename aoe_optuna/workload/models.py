"""GEMM problems and model workloads, and how latencies become tokens/s.

A workload is the list of GEMMs of one forward step (each with how many times
it runs per step), the time of the parts the tiling does not change
(attention, norms, activations, all-reduces), and how many tokens one step
yields. The same tiling config is used for every GEMM of the workload: one
kernel, one set of constants.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile

MAX_DIM = 1 << 24  # a GEMM dimension past this is a typo, not a workload


@dataclass(frozen=True)
class Gemm:
    """C[M, N] = A[M, K] @ B[K, N] in ``dtype`` (C written in the same dtype)."""

    M: int
    K: int
    N: int
    dtype: str = "fp16"
    name: str = "gemm"
    count: int = 1  # times it runs per forward step

    def __post_init__(self) -> None:
        for dim in ("M", "K", "N"):
            v = getattr(self, dim)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_DIM:
                raise ValueError(f"{dim}: expected an integer from 1 to {MAX_DIM}, got {v!r}")
        if self.dtype not in DTYPE_BYTES:
            raise ValueError(f"dtype: expected one of {list(DTYPE_BYTES)}, got {self.dtype!r}")

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.K * self.N

    @property
    def min_bytes(self) -> float:
        """Bytes that must cross HBM at least once: A, B read and C written."""
        b = DTYPE_BYTES[self.dtype]
        return float((self.M * self.K + self.K * self.N + self.M * self.N) * b)

    @property
    def key(self) -> tuple[int, int, int, str]:
        return (self.M, self.K, self.N, self.dtype)

    def roofline_s(self, profile: SocProfile) -> float:
        """The latency no tiling can beat: compute or HBM traffic, whichever is longer."""
        compute = self.flops / profile.peak_flops(self.dtype)
        return max(compute, self.min_bytes / profile.hbm_bandwidth())


@dataclass(frozen=True)
class Workload:
    """GEMMs of one step, the tiling-independent time, and tokens per step."""

    name: str
    gemms: tuple[Gemm, ...]
    tokens_per_step: int
    fixed_s: float = 0.0  # attention, norms, activations, communication
    details: Mapping[str, float] = field(default_factory=dict)

    @property
    def dtype(self) -> str:
        return self.gemms[0].dtype

    def step_time(self, latencies: Mapping[str, float]) -> float:
        """Step time from one latency per GEMM name."""
        return self.fixed_s + sum(g.count * latencies[g.name] for g in self.gemms)

    def tokens_per_s(self, latencies: Mapping[str, float]) -> float:
        return self.tokens_per_step / self.step_time(latencies)

    def roofline_step_s(self, profile: SocProfile) -> float:
        return self.fixed_s + sum(g.count * g.roofline_s(profile) for g in self.gemms)

    def roofline_tokens_per_s(self, profile: SocProfile) -> float:
        """The best tokens/s any tiling could reach on ``profile``."""
        return self.tokens_per_step / self.roofline_step_s(profile)


def single_gemm(gemm: Gemm) -> Workload:
    """One GEMM as a workload: tokens/s = M / latency (each row of A is a token)."""
    return Workload(name=f"gemm {gemm.M}x{gemm.K}x{gemm.N} {gemm.dtype}",
                    gemms=(gemm,), tokens_per_step=gemm.M)


# Qwen2.5-7B (config.json of Qwen/Qwen2.5-7B-Instruct, as quoted in the reference).
QWEN25_7B = {
    "hidden": 3584,
    "intermediate": 18944,
    "layers": 28,
    "q_heads": 28,
    "kv_heads": 4,
    "head_dim": 128,
    "vocab": 152064,
}

MODELS = {"qwen2.5-7b": QWEN25_7B}


def model_workload(
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
    Attention, norms and activations are charged as HBM traffic (they do not
    depend on the GEMM tiling); attention in prefill also as cube work.
    """
    if model not in MODELS:
        raise ValueError(f"model: expected one of {list(MODELS)}, got {model!r}")
    if phase not in ("decode", "prefill"):
        raise ValueError(f"phase: expected 'decode' or 'prefill', got {phase!r}")
    cfg = MODELS[model]
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
        Gemm(m, h, cfg["vocab"] // tp, dtype, "lm_head", 1),
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
