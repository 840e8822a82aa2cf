"""Measured single-core figures the simulator's constants are fitted to.

Every table is a verbatim excerpt of msKPP's profiling data
(``csrc/prof_data/resource910b.cpp`` of Huawei's MindStudio msKPP, the figures
that the reference ``ascend-910b.md`` quotes). The fits live next to the
model parts that use them (the simulator's ``cube`` and ``transfer``); this module only
holds data, so a new measurement replaces a table and nothing else.
"""

from __future__ import annotations

# MMAD fp16 x fp16 -> fp32 on one core: (m, k, n, ops per cycle). Peak is 8192.
MMAD_910B1: tuple[tuple[int, int, int, float], ...] = (
    (32, 16, 16, 3369.81), (32, 16, 32, 5445.00), (32, 16, 48, 5893.53),
    (32, 16, 64, 6685.98), (32, 16, 96, 7053.96), (32, 16, 128, 7258.39),
    (32, 16, 192, 7532.30), (32, 16, 256, 7693.37), (32, 16, 384, 7879.76),
    (32, 16, 512, 7818.66), (32, 16, 768, 8043.86), (32, 16, 1024, 8057.17),
)
MMAD_910B3: tuple[tuple[int, int, int, float], ...] = (
    (16, 16, 16, 327.90), (16, 16, 32, 654.68), (16, 16, 64, 1213.58),
    (16, 16, 128, 2114.27), (16, 16, 256, 3358.70), (16, 16, 384, 4184.59),
    (16, 16, 512, 4763.96), (16, 16, 768, 5538.76), (16, 16, 1024, 6024.31),
)

# GM -> L1 DataCopy on one 910B1 core: (bursts per instruction, GB/s). Each burst is
# 4096 B (the table's per-burst data column).
GM_TO_L1_BURST_BYTES = 4096
GM_TO_L1_910B1: tuple[tuple[int, float], ...] = (
    (1, 9.93), (2, 17.86), (4, 29.33), (8, 57.98), (16, 93.19), (32, 147.37),
    (64, 176.28), (96, 214.50), (128, 232.51), (192, 248.04), (256, 261.36),
    (320, 252.60), (384, 260.26), (448, 273.66), (512, 261.86),
)

# L1 -> L0A / L0B LoadData: (repeats of one 512 B fractal, GB/s).
L1_TO_L0A_910B1: tuple[tuple[int, float], ...] = (
    (1, 217.14), (2, 349.97), (4, 390.93), (8, 414.60), (16, 427.44), (24, 431.84),
    (48, 436.41), (96, 438.75), (128, 439.33),
)
L1_TO_L0B_910B1: tuple[tuple[int, float], ...] = (
    (1, 175.31), (2, 195.50), (4, 207.34), (8, 213.73), (16, 217.06), (24, 218.20),
    (48, 219.38), (96, 219.95), (128, 220.09),
)

# L0C -> GM FixPipe: (bursts, GB/s); flat time up to ~10 bursts, then bandwidth-bound.
L0C_TO_GM_910B1: tuple[tuple[int, float], ...] = (
    (1, 20.78), (2, 41.89), (4, 85.79), (6, 112.46), (8, 161.25), (10, 195.65),
    (12, 196.72), (16, 203.25), (20, 197.43), (32, 201.33), (64, 196.54), (128, 196.84),
)
# Burst size of the FixPipe table is not stated; we assume one 16x16 fp16 fractal.
L0C_TO_GM_BURST_BYTES = 512

# Vector instructions on one 910B1 core (msKPP ``V*_1_core_910b1`` tables, the row at
# the largest repeat count each table gives): op: (elements, repeats, total cycles).
# Elements are the table's ``num_sum``; arithmetic is fp32 unless the cast names it.
# Two-operand Add, Mul and Exp take two cycles a 64-element repeat, one-operand Adds
# and Muls one, Div four, WholeReduceSum (VCADD) three; a cast moves 128 elements a
# cycle, except fp32 -> bf16 (64).
VECTOR_910B1: dict[str, tuple[int, int, float]] = {
    "add": (1024, 16, 32.03312),         # VADD_FP32_FP32_FP32
    "mul": (384, 6, 12.03018),           # VMUL_FP32_FP32_FP32
    "exp": (384, 6, 12.03647),           # VEXP_FP32_FP32
    "adds": (1024, 16, 16.03654),        # VADDS_FP32_FP32_FP32
    "muls": (384, 6, 6.031555),          # VMULS_FP32_FP32_FP32
    "div": (576, 9, 36.04281),           # VDIV_FP32_FP32_FP32
    "reduce": (896, 14, 42.039585),      # VCADD_FP32_FP32 (WholeReduceSum)
    "dup": (256, 4, 4.024305),           # VECTORDUP_FP32_FP32
    "cast_fp16_fp32": (2048, 16, 15.6186),     # VCONV_FP16_FP32
    "cast_fp32_fp16": (1024, 16, 7.83864),     # VCONV_FP32_FP16
    "cast_bf16_fp32": (2048, 16, 16.024885),   # VCONV_BF16_FP32
    "cast_fp32_bf16": (1024, 16, 16.0321),     # VCONV_FP32_BF16
    # fp16 arithmetic; VADD_FP16's row gives no cycles: 2 B x 24576 / its 127.98 B a cycle
    "add_fp16": (24576, 192, 384.06),    # VADD_FP16_FP16_FP16
    "mul_fp16": (960, 15, 30.035305),    # VMUL_FP16_FP16_FP16
}

# GM -> UB and UB -> GM DataCopy on one 910B1 core: (KiB moved, GB/s). msKPP reads
# the first column as KiB (``numBursts * 1024`` bytes, csrc/prof_data/data_adapter.cpp
# ``InitOneMovPathData``); rows of GM_TO_UB_910b1 and UB_TO_GM_910b1.
GM_TO_UB_910B1: tuple[tuple[int, float], ...] = (
    (1, 7.29), (2, 13.48), (3, 18.62), (4, 23.60), (5, 27.78), (6, 32.99), (8, 42.74),
    (10, 47.85), (12, 54.55), (16, 67.99), (20, 69.26), (24, 77.12), (32, 77.19),
    (48, 77.35), (64, 77.05), (96, 77.98), (128, 78.49), (160, 78.23), (200, 78.56),
)
UB_TO_GM_910B1: tuple[tuple[int, float], ...] = (
    (2, 22.11), (3, 30.27), (4, 37.91), (5, 44.97), (6, 51.24), (8, 57.84), (10, 66.69),
    (12, 75.87), (16, 86.85), (20, 95.05), (24, 106.94), (32, 108.39), (48, 109.90),
    (64, 110.66),
)
