"""Published 910B timings of attention and vector kernels, one row per figure.

Each row names its source (``SOURCES``), the kernel and shape, the chip, how
it was timed and its role: it ``fit`` a constant, only ``check``\\s the model,
or was ``seen``: its misses were read and a model was changed after them, so it
no longer checks that model and gives no error band (it is reported apart, as an
in-sample figure).
The only constants set from these figures are per-host dispatch floors: a
figure timed as back-to-back eager calls from the host is the longer of the
kernel and the host's per-call dispatch, a property of that host and
framework, not of the chip, so each such source gives its floor from its
smallest shape (the row marked ``fit``) and every other row checks. No chip
constant of the attention models was fitted to any row here; of the vector
models, one: a ``DataCopyPad`` burst's cycles (``vector_pipe.PAD_BURST_CYCLES``),
read from cann-bench's seen RmsNorm and SwiGlu rows, which give no band.

pto-isa's CANN fused-attention rows still check: CANN's FIA prefill
(``aicore/cann/fia_prefill.py``) was ported from CANN's source after their misses at
one to eight units were read, with no constant set from them.

cann-bench's baselines time CANN's own RmsNorm, SwiGlu and fused-attention
kernels one by one on the cores (no host floor), each case with its full shape.
Its RmsNorm and SwiGlu rows are ``seen``: the vector models of CANN's kernels
(``aicore/cann/rms_norm.py``, ``swiglu.py``) were written after
their misses were analysed, though no constant was set from them. So are the five
MLA decode rows it first gave: CANN's MLA kernel (``aicore/cann/mla_decode.py``)
was modelled after their 1.8x miss against the catlass
template was read; four MLA cases added after that model was written (a decode
case and three of two query tokens) check it. Cases whose baseline
launches more than the one kernel (a Slice before a SwiGlu, the Concat/Broadcast
around ApplyRotaryPosEmb) are left out: their time is not one kernel's.

Searched and not used (see ``NOT_USED``): figures on another chip (Ascend
950, Atlas A3) or an unnamed one, Triton-compiled kernels, timings without
their shape and timings of several kernels together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

PTO_ISA = "pto-isa"
PTO_KERNELS = "pto-kernels"
PYPTO = "pypto-lib"
CANN_BENCH = "cann-bench"

SOURCES: dict[str, str] = {
    PTO_ISA: ("cannmirror/pto-isa demos/torch_jit/flash_atten/README.md"
              "@1fb190ca0b246578c198218752e1981b5766e023, its mirror zouzias/pto-isa-mirror"
              "@067f1e7d667f6e062f5f044ad01d9db65add562f (both hosts' JIT columns) and "
              "demos/torch_jit/flash/README.md@8d8c14a80f2165ba060efd10d314565dffe2d0a5 "
              "(an earlier run, 50 warm-up and 200 timed calls; fa_benchmark.py)"),
    PTO_KERNELS: "https://github.com/huawei-csl/pto-kernels/pull/193 (2026-06-26)",
    PYPTO: "https://github.com/hw-native-sys/pypto-lib/issues/622 (comment of 2026-06-29)",
    CANN_BENCH: ("hicann/cann-bench tasks/level1/swi_glu, tasks/level2/rms_norm and "
                 "tasks/level4/mla cases.csv@0f40c15d7b99314986468fb8fbab61caa0209a49, column "
                 "baseline_perf_us: the CANN kernels each case's note lists, timed on a 910B2 "
                 "(the baseline hardware of docs/spec/benchmark_spec.md and "
                 "src/kernel_eval/utils/baseline_resolver.py)"),
}

# How each source timed its figures.
EAGER_LOOP = ("NPU events around 50 back-to-back eager torch_npu calls after 10 warm-up "
              "calls (host dispatch overlaps the kernels; L2 warm)")
JIT_LOOP = "us/iter of a loop of JIT-launched calls from torch (host dispatch overlaps; L2 warm)"
ON_CORE = ("AI-core on-core time from the runtime's L2 swimlane trace, cross-checked "
           "against the device log (kernel only, no host)")
PROFILED_COLD = ("kernel Duration from torch_npu.profiler's kernel_details.csv, median of the "
                 "timed steps, clock raised and L2 cleared before each step (kernel only, "
                 "no host)")


ROLES = ("fit", "check", "seen")
SEEN = "seen"


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
    role: str = "check"  # "fit": sets this host's dispatch floor; "check": never fits;
    # "seen": a model was changed after its misses were read (in-sample, no band)
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

_CANN_BENCH_DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}

# cann-bench tasks/level2/rms_norm: case: (x shape, dtype, us); gamma is x's last dim.
_RMSNORM_US = {
    1: ((32, 128, 768), "float16", 21.16), 2: ((32, 128, 1024), "float32", 31.90),
    3: ((32, 128, 2048), "bfloat16", 64.60), 4: ((16, 256, 4096), "float16", 75.66),
    5: ((8, 512, 8192), "float32", 145.76), 6: ((4, 1023, 4097), "bfloat16", 81.26),
    7: ((63, 67, 1023), "float16", 26.58), 8: ((16, 511, 2049), "float32", 132.02),
    9: ((8, 1021, 4099), "bfloat16", 154.34), 10: ((33, 127, 769), "float16", 24.56),
    11: ((31, 129, 2049), "float32", 69.00), 12: ((17, 255, 4097), "bfloat16", 85.42),
    13: ((7, 1009, 1021), "float16", 35.02), 14: ((11, 367, 373), "float32", 24.82),
    15: ((1000003, 2), "bfloat16", 1146.06), 16: ((11, 13, 17, 67), "float16", 10.88),
    17: ((3, 7, 11, 4096), "float32", 11.10), 18: ((2, 511, 8192), "bfloat16", 30.40),
    19: ((4, 255, 4096), "float16", 24.34), 20: ((2, 3, 17, 1024, 128), "float32", 67.78),
}

# cann-bench tasks/level1/swi_glu: case: (input shape, split dim, dtype, us), the cases
# whose baseline is the SwiGlu kernel alone (6, 8, 13, 16, 17, 19 add a Slice).
_SWIGLU_US = {
    1: ((1024, 2048), -1, "float16", 15.44), 2: ((2048, 4096), -1, "float32", 35.86),
    3: ((4096, 8192), -1, "bfloat16", 58.84), 4: ((8192, 16384), 0, "float16", 288.77),
    5: ((2039, 65520), -1, "float32", 748.86), 7: ((1009, 2016), -1, "float16", 16.10),
    9: ((363, 367, 14), -1, "bfloat16", 228.19), 10: ((2049, 1024), 1, "float16", 15.46),
    11: ((3, 7, 13, 1018), -1, "float32", 9.62), 12: ((1000003, 2), 1, "bfloat16", 1655.61),
    14: ((3, 7, 11, 13, 1012), -1, "float16", 21.04), 15: ((512, 4096), -1, "float32", 18.28),
    18: ((2, 1023, 4096), -1, "float32", 36.44), 20: ((2, 3, 17, 512, 100), -1, "float32", 78.12),
}

# cann-bench tasks/level4/mla, the decode cases (one query token, latent 512 + rope 64,
# one KV head, the whole cache contiguous): case: (batch, q heads, context, layout,
# dtype, us). Case 7 has no baseline; case 11's note and shape disagree on its context.
_MLA_DECODE_US = {
    8: (16, 128, 2048, "BSND", "float16", 117.96), 9: (32, 128, 2048, "BSND", "bfloat16", 187.72),
    10: (60, 128, 2048, "BSND", "float16", 287.75), 12: (60, 64, 2048, "BSND", "float16", 272.99),
    16: (60, 128, 2048, "BNSD", "float16", 293.71),
}
# The cases added after CANN's MLA kernel was modelled, never read before it: held out.
# (batch, q heads, query tokens, context, layout, dtype, us). Case 11's note says 4096
# tokens, its shape 1024 and its t_hw_us (103.13, the roofline cann-bench computes from
# the shape) agrees with the shape; case 18's note says 4096, its shape and t_hw_us
# (309.31, 6 x case 17's) 2048: the shapes are kept. Cases 17-19 are multi-token
# prediction: two query tokens a sequence (17 and 18 causal).
_MLA_CHECK_US = {
    11: (128, 128, 1, 1024, "BSND", "float16", 322.85),
    17: (16, 128, 2, 2048, "BSND", "float16", 145.84),
    18: (96, 128, 2, 2048, "BSND", "bfloat16", 548.55),
    19: (16, 128, 2, 2048, "BNSD", "float16", 140.66),
}


def split_rows_width(shape: tuple[int, ...], dim: int) -> tuple[int, int]:
    """An elementwise kernel's output as rows x width: the dims before ``dim`` are rows,
    half of ``dim`` and the dims after it one contiguous row of each half."""
    d = dim % len(shape)
    return math.prod(shape[:d]), shape[d] // 2 * math.prod(shape[d + 1:])


def _norm(case: int, shape: tuple[int, ...], dtype: str, us: float) -> LayerOpFigure:
    return LayerOpFigure(
        CANN_BENCH, "rmsnorm", "cann_rmsnorm",
        f"RmsNorm case {case}: x {list(shape)}, gamma [{shape[-1]}], {dtype}", "Ascend910B2",
        {"rows": math.prod(shape[:-1]), "width": shape[-1],
         "dtype": _CANN_BENCH_DTYPES[dtype]}, us, PROFILED_COLD, role=SEEN)


def _swiglu(case: int, shape: tuple[int, ...], dim: int, dtype: str,
            us: float) -> LayerOpFigure:
    rows, width = split_rows_width(shape, dim)
    return LayerOpFigure(
        CANN_BENCH, "swiglu", "cann_swiglu",
        f"SwiGlu case {case}: x {list(shape)} split on dim {dim}, {dtype}", "Ascend910B2",
        {"rows": rows, "width": width, "dtype": _CANN_BENCH_DTYPES[dtype]}, us, PROFILED_COLD,
        role=SEEN)


def _mla_decode(case: int, batch: int, heads: int, context: int, layout: str, dtype: str,
                us: float, query_tokens: int = 1, role: str = SEEN) -> LayerOpFigure:
    tokens = f", {query_tokens} query tokens" if query_tokens > 1 else ""
    return LayerOpFigure(
        CANN_BENCH, "mla_decode_attention", "cann_fia",
        f"FusedInferAttentionScore MLA decode case {case}: b{batch}, {heads} Q heads{tokens}, "
        f"1 KV head, {context} tokens, d 512 + 64, {layout}, {dtype}", "Ascend910B2",
        {"batch": batch, "q_heads": heads, "context": context, "kv_lora_rank": 512,
         "qk_rope_head_dim": 64, "kv_layout": layout, "dtype_bytes": 2,
         "query_tokens": query_tokens}, us, PROFILED_COLD, role=role)


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
    *(_norm(case, *row) for case, row in _RMSNORM_US.items()),
    *(_swiglu(case, *row) for case, row in _SWIGLU_US.items()),
    *(_mla_decode(case, *row) for case, row in _MLA_DECODE_US.items()),
    *(_mla_decode(case, b, h, s, layout, dt, us, q, role="check")
      for case, (b, h, q, s, layout, dt, us) in _MLA_CHECK_US.items()),
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
    ("tile-ai/tilelang-ascend examples/pos_embedding/RotaryPositionEmbedding/bench_mark.md"
     "@628f8a416deaf69161217100ea98876704532fd6",
     "aclnnRotaryPositionEmbedding, 13 shapes (x [B, S, N, D] up to 64 x 64 x 128), msprof"
     " Task Duration 7.6-21.5 us: the chip is not named"),
    ("hicann/cann-bench tasks/level2/apply_rotary_pos_emb@0f40c15",
     "every case's baseline adds ConcatD, BroadcastTo or Transpose kernels to"
     " ApplyRotaryPosEmb: not one kernel's time"),
    ("hicann/cann-bench tasks/level1/swi_glu@0f40c15 cases 6, 8, 13, 16, 17, 19",
     "a Slice kernel runs before the SwiGlu: two kernels' time"),
    ("hicann/cann-bench tasks/level4/mla@0f40c15 prefill cases",
     "prefill over the latent (no model of it); its decode and MTP cases are rows above"),
    ("https://github.com/tile-ai/tilelang-ascend/pull/1645 (searched again for CANN's MLA)",
     "no CANN MLA timing beside the TileLang ones; vllm-ascend, sglang and pypto-lib"
     " threads give end-to-end tokens/s or an Ascend 950/910C, not one 910B kernel"),
    ("hicann/cann-bench tasks/level3/add_rms_norm_dynamic_quant@0f40c15",
     "AddRmsNorm fused with a dynamic int8 quantisation: not the add_rmsnorm kernel"),
    ("https://github.com/flagos-ai/FlagGems-vllm/pull/762",
     "gemma_rmsnorm on a 910B, 3-9 us: the torch reference is several eager ops"
     " (pow, mean, rsqrt, mul), not CANN's RmsNorm"),
    ("https://github.com/hw-native-sys/pypto-lib/issues/1054",
     "msprof per-kernel table of DeepSeek-V4-Flash decode: an Ascend 950PR"),
    ("https://github.com/linkedin/Liger-Kernel/issues/1159",
     "Atlas 900 A2 benchmark of rms_norm, swiglu and rope against torch: pass/fail marks"
     " only, and the torch side is composed of eager ops"),
    ("hicann/cann-bench tasks/metadata/910b2.json@d59d44ca1cf14ed20c1e90cbbcbf4a3747ff84de",
     "the same RmsNorm and SwiGlu baselines moved out of cases.csv, now capped at"
     " max(10 t_hw, 10 us) (RmsNorm 15 and 16, SwiGlu 9, 12 and 13 are caps, not"
     " timings): no new figure; the uncapped 0f40c15 values are kept"),
    ("hicann/cann-bench bench_lab/kernel_bench/metadata/910b3.json@d59d44c",
     "910B3 baselines of ClippedSwiglu, MultiAddRmsNormDynamicQuant and"
     " KvRmsNormRopeCache: other kernels (clamps, quantisation, a cache write)"),
    ("hicann/cann-bench bench_lab/stanford_bench level1 36_RMSNorm_, 25_Swish@d59d44c",
     "torch references composed of eager ops (a norm over dim 1, x * sigmoid(x)), not"
     " CANN's RmsNorm or SwiGlu"),
    ("https://github.com/RL-Align/RL-Kernel/pull/364 (and #324, #334)",
     "Ascend C RMSNorm and SwiGLU kernels of their own on an NPU: no timing of CANN's"
     " kernels with its shape in the text found"),
    ("op_summary and op_statistic tables posted in public repositories (RmsNorm,"
     " InplaceAddRmsNorm, ApplyRotaryPosEmb rows)",
     "averages over a model run: no shape per call, mostly no chip named"),
)

# The kinds searched for, named as the knowledge base files them (its ops; the band kinds).
KINDS: tuple[str, ...] = ("decode_attention", "prefill_attention", "mla_decode_attention",
                          "rmsnorm", "add_rmsnorm", "swiglu", "rope")
