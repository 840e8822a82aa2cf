"""Published 910B timings of attention and vector kernels, one row per figure.

Each row names its source (``SOURCES``), the kernel and shape, the chip, how
it was timed and whether it ``fit`` a constant or only ``check``\\s the model.
The only constants set from these figures are per-host dispatch floors: a
figure timed as back-to-back eager calls from the host is the longer of the
kernel and the host's per-call dispatch, a property of that host and
framework, not of the chip, so each such source gives its floor from its
smallest shape (the row marked ``fit``) and every other row checks. No chip
constant of the attention or vector models was fitted to any row here.

Searched and not used (see ``NOT_USED``): figures on another chip (Ascend
950, Atlas A3), Triton-compiled kernels and timings without their shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PTO_ISA = "pto-isa"
PTO_KERNELS = "pto-kernels"
PYPTO = "pypto-lib"

SOURCES: dict[str, str] = {
    PTO_ISA: ("cannmirror/pto-isa demos/torch_jit/flash_atten/README.md"
              "@1fb190ca0b246578c198218752e1981b5766e023, its mirror zouzias/pto-isa-mirror"
              "@067f1e7d667f6e062f5f044ad01d9db65add562f (both hosts' JIT columns) and "
              "demos/torch_jit/flash/README.md@8d8c14a80f2165ba060efd10d314565dffe2d0a5 "
              "(an earlier run, 50 warm-up and 200 timed calls; fa_benchmark.py)"),
    PTO_KERNELS: "https://github.com/huawei-csl/pto-kernels/pull/193 (2026-06-26)",
    PYPTO: "https://github.com/hw-native-sys/pypto-lib/issues/622 (comment of 2026-06-29)",
}

# How each source timed its figures.
EAGER_LOOP = ("NPU events around 50 back-to-back eager torch_npu calls after 10 warm-up "
              "calls (host dispatch overlaps the kernels; L2 warm)")
JIT_LOOP = "us/iter of a loop of JIT-launched calls from torch (host dispatch overlaps; L2 warm)"
ON_CORE = ("AI-core on-core time from the runtime's L2 swimlane trace, cross-checked "
           "against the device log (kernel only, no host)")


@dataclass(frozen=True)
class LayerOpFigure:
    """One published timing: what ran, on which chip, how it was timed, how long."""

    source: str  # a key of SOURCES
    kind: str  # a knowledge base op of KINDS: "prefill_attention", "rmsnorm", ...
    kernel: str  # "cann_fia" (CANN fused attention), "pto_flash", "pto_paged", "cce_paged"
    what: str
    soc: str
    shape: dict[str, Any]
    time_us: float
    timed: str
    host: str = ""  # the timing host where a dispatch floor applies ("" for kernel-only)
    role: str = "check"  # "fit": sets this host's dispatch floor; "check": never fits
    tiling: str = "default"  # "default": the kernel's own host tiling; "best": its best
    note: str = field(default="", compare=False)


def _fia(seq_q: int, seq_kv: int, host: str, us: float) -> LayerOpFigure:
    return LayerOpFigure(
        PTO_ISA, "prefill_attention", "cann_fia",
        f"npu_fused_infer_attention_score, BSH, 1 head of 128, S_q {seq_q}, S_kv {seq_kv}",
        "Ascend910B2", {"batch": 1, "heads": 1, "head_dim": 128, "seq_q": seq_q,
                        "seq_kv": seq_kv, "causal": False, "dtype_bytes": 2},
        us, EAGER_LOOP, host, "fit" if (seq_q, seq_kv) == (128, 1024) else "check")


_FUSED_US = {  # (seq_q, seq_kv): (aarch64 host, x86_64 host), the "Fused us" columns
    (128, 1024): (70.338, 46.83), (128, 2048): (70.898, 48.20),
    (128, 4096): (72.652, 47.93), (128, 8192): (73.365, 52.58),
    (256, 1024): (72.522, 48.41), (256, 2048): (73.369, 50.13),
    (256, 4096): (74.567, 49.19), (256, 8192): (73.150, 68.99),
    (512, 1024): (71.964, 52.50), (512, 2048): (74.180, 53.62),
    (512, 4096): (73.984, 61.27), (512, 8192): (75.936, 88.09),
    (1024, 1024): (74.404, 55.40), (1024, 2048): (73.102, 61.38),
    (1024, 4096): (75.043, 84.73), (1024, 8192): (90.272, 103.27),
    (2048, 1024): (76.777, 63.49), (2048, 2048): (75.535, 84.70),
    (2048, 4096): (91.798, 101.94), (2048, 8192): (126.845, 142.38),
}


def _jit(seq_q: int, seq_kv: int, host: str, us: float) -> LayerOpFigure:
    return LayerOpFigure(
        PTO_ISA, "prefill_attention", "pto_flash",
        f"PTO jit_flash, one 128-row Q block per AI core ({seq_q // 128} cores), "
        f"1 head of 128, S_q {seq_q}, S_kv {seq_kv}",
        "Ascend910B2", {"batch": 1, "heads": 1, "head_dim": 128, "seq_q": seq_q,
                        "seq_kv": seq_kv, "causal": False, "dtype_bytes": 2},
        us, EAGER_LOOP, "jit-" + host, "fit" if (seq_q, seq_kv) == (128, 1024) else "check")


_JIT_US = {  # (seq_q, seq_kv): (aarch64 host, x86_64 host), the "JIT us" columns
    (128, 1024): (19.200, 16.54), (128, 2048): (23.420, 23.98),
    (128, 4096): (38.317, 40.94), (128, 8192): (68.778, 72.14),
    (256, 1024): (18.604, 16.77), (256, 2048): (23.939, 22.96),
    (256, 4096): (39.838, 40.43), (256, 8192): (71.212, 72.39),
    (512, 1024): (18.603, 18.03), (512, 2048): (24.787, 25.02),
    (512, 4096): (41.475, 41.21), (512, 8192): (74.903, 73.93),
    (1024, 1024): (19.439, 18.70), (1024, 2048): (26.221, 26.76),
    (1024, 4096): (43.127, 44.20), (1024, 8192): (76.855, 77.65),
    (2048, 1024): (23.424, 23.27), (2048, 2048): (36.055, 35.15),
    (2048, 4096): (59.690, 58.43), (2048, 8192): (107.780, 100.93),
}

# The earlier run (flash/README.md@8d8c14a): (seq_q, seq_kv): (fused us, JIT us).
_EARLIER_RUN_US = {
    (128, 1024): (68.735, 16.268), (256, 1024): (68.513, 16.528),
    (512, 1024): (67.892, 17.137), (1024, 1024): (70.002, 18.915),
    (128, 2048): (74.909, 23.187), (256, 2048): (80.121, 23.948),
    (512, 2048): (73.713, 23.880), (1024, 2048): (70.119, 26.139),
    (128, 4096): (71.704, 38.098), (256, 4096): (70.272, 38.538),
    (512, 4096): (71.013, 42.146), (1024, 4096): (70.864, 40.731),
    (128, 8192): (67.072, 68.175), (256, 8192): (68.459, 68.574),
    (512, 8192): (72.393, 69.252), (1024, 8192): (90.021, 75.708),
}


def _paged(context: int, us: float) -> LayerOpFigure:
    return LayerOpFigure(
        PTO_KERNELS, "decode_attention", "pto_paged",
        f"paged_attention_highperf_jit b1_h32_kv8_s{context}_bs128_fp16, block_dim 24",
        "Ascend910B2", {"batch": 1, "q_heads": 32, "kv_heads": 8, "head_dim": 128,
                        "context": context, "page_tokens": 128, "kv_layout": "BSND",
                        "dtype_bytes": 2},
        us, JIT_LOOP, "pto-kernels host", "fit" if context == 4096 else "check")


_PAGED_US = {4096: 84.563, 8192: 83.516, 16384: 84.572, 32768: 124.251,
             65536: 294.831, 131072: 565.181}

_CCE_SHAPE = {"batch": 16, "q_heads": 40, "kv_heads": 8, "head_dim": 128, "context": 4096,
              "page_tokens": 128, "kv_layout": "BSND", "dtype_bytes": 2}

FIGURES: tuple[LayerOpFigure, ...] = (
    *(_fia(sq, sk, host, us) for (sq, sk), pair in _FUSED_US.items()
      for host, us in zip(("aarch64", "x86_64"), pair, strict=True)),
    *(_jit(sq, sk, host, us) for (sq, sk), pair in _JIT_US.items()
      for host, us in zip(("aarch64", "x86_64"), pair, strict=True)),
    *(_fia(sq, sk, "earlier run", pair[0]) for (sq, sk), pair in _EARLIER_RUN_US.items()),
    *(_jit(sq, sk, "earlier run", pair[1]) for (sq, sk), pair in _EARLIER_RUN_US.items()),
    *(_paged(ctx, us) for ctx, us in _PAGED_US.items()),
    LayerOpFigure(PYPTO, "decode_attention", "cce_paged",
                  "CCE paged attention (#899 port), runtime default long-sequence tiling, "
                  "b16 h40 kv8 d128 s4096 bs128 bf16", "Ascend910B2", _CCE_SHAPE, 462.0,
                  ON_CORE, tiling="default"),
    LayerOpFigure(PYPTO, "decode_attention", "cce_paged",
                  "CCE paged attention (#899 port), best tiling (batch-head split), "
                  "b16 h40 kv8 d128 s4096 bs128 bf16", "Ascend910B2", _CCE_SHAPE, 343.0,
                  ON_CORE, tiling="best"),
)


def of_kernel(kernel: str, hosts: tuple[str, ...] = (), **shape: Any) -> tuple[LayerOpFigure, ...]:
    """The figures of ``kernel`` (a :class:`LayerOpFigure` kernel), on any of ``hosts``
    when given, whose shape holds every ``shape`` value (e.g. ``seq_q=128``)."""
    return tuple(f for f in FIGURES if f.kernel == kernel and (not hosts or f.host in hosts)
                 and all(f.shape.get(k) == v for k, v in shape.items()))


# Published timings found and left out, with the reason (no row above uses them).
NOT_USED: tuple[tuple[str, str], ...] = (
    ("https://github.com/vllm-project/vllm-ascend/pull/15902",
     "npu_rms_norm 1-512 tokens x 7168, fp16/bf16, 24.6-25.7 us: an Ascend 950, not a 910B"),
    ("https://github.com/fla-org/flash-linear-attention/issues/942",
     "swiglu_fwd B x T x D (67.7 us at 4 x 512 x 1024): Atlas 800T A3 and Triton-compiled"
     " kernels, not CANN's SwiGlu"),
    ("https://github.com/linkedin/Liger-Kernel/pull/1099",
     "Triton rms_norm on a 910B4, about 0.25 ms per call: rows not given, framework"
     " overhead not separated"),
    ("https://github.com/tile-ai/tilelang-ascend/pull/1791",
     "aclnnRmsNorm baseline on a 910B3, 20 configs: only ratios in the text found"),
    ("zouzias/pto-isa-mirror demos/torch_jit/flash_atten/README.md (another version)",
     "a run on a host whose dispatch floor (about 218 us fused, 90 us JIT) hides every"
     " shape but S_q 2048 x S_kv 8192"),
    ("https://github.com/hw-native-sys/pto-isa/pull/175",
     "a CCE paged-attention translation at 426-1018 us for b1 s4096-131072: an earlier"
     " build of the kernel pto-kernels#193 times at 84-565 us; the later figures kept"),
    ("https://github.com/huawei-csl/pto-kernels/pull/193",
     "its s128 and s512 rows (164, 592 us), slower than s4096 (85 us): a start-up"
     " artefact of the JIT harness, not kernel time"),
    ("https://github.com/flagos-ai/FlagGems/pull/6324 (and #6424, #5627)",
     "torch_npu swiglu, fp16/fp32, [4, 32] to [100, 65536, 100]: the chip is not named"
     " (\"Ascend\") nor is the torch reference's composition"),
    ("https://github.com/tile-ai/tilelang-ascend/pull/1444 (and #1467, #1481, #1516)",
     "cann-bench swi_glu, 20 cases against npu_swiglu on a 910B2, kernel time from"
     " kernel_details.csv: only the mean ratio (0.7751x) in the text found, no case's time"),
    ("https://github.com/tile-ai/tilelang-ascend/pull/1558",
     "rms_norm on cann-bench's 20 cases: no case's shape or time in the text found"),
    ("https://github.com/tile-ai/tilelang-ascend/pull/1644 (and #1645, #1647)",
     "MLA decode on a 910B3, b128-132, 128 heads, 8192 tokens, d 512 + 64, fp16,"
     " 4083-5249 us: TileLang-generated kernels at about 20% of peak, timed end to end"
     " with do_bench; neither CANN's kernel nor the catlass template the model follows"),
    ("https://github.com/vllm-project/vllm-omni/pull/6908",
     "npu_rotary_mul on a 910B2C, T 1, H 20, D 64: 0.201 ms for q and k with layout"
     " conversions around them, a host-bound sequence, not one kernel's time"),
)

# The kinds searched for, named as the knowledge base files them (its ops; the band kinds).
KINDS: tuple[str, ...] = ("decode_attention", "prefill_attention", "mla_decode_attention",
                          "rmsnorm", "add_rmsnorm", "swiglu", "rope")
