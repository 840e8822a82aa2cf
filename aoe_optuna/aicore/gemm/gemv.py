"""A GEMM with a tiny N may run on the vector cores' GEMV kernel instead of the cube.

Why a threshold at N <= 8: the cube computes 16 columns per fractal
(geometry.FRACTAL), so a GEMM with N <= 8 spends at least half of every MMAD
on padding, and its arithmetic intensity (at most N flops per byte of A) is
far under the 910B's ridge point (about 220 flops per byte): the kernel is
pure streaming, and a cube kernel adds per-K-step MMAD and L0 hand-overs to
the stream while dealing at most ``ceil(M / tile_m)`` blocks to the cores (one
block for a decode router, 1 x 4096 x 8: one core walks all of K). catlass
ships GEMV kernels for such shapes, on the vector cores (examples/17_gemv_aiv,
numbered 04_gemv_aiv in early 2025) and on the cube (examples/18_gemv_aic).
The simulator charges a tiny-N GEMM the faster of the config's cube kernel and
the GEMV kernel, which no cube tiling changes: a cube config that beats it
still counts, one that does not costs the GEMV's time.

Tiny M (decode, M = 1) keeps the cube: its blocks run along N, every core
streams its own weight columns at full HBM bandwidth, and a published cube
timing of 1 x 768 x 5120 (calibration/published_gemm.py) is what the simulator is
calibrated on.

The model (AIV GEMV): the bytes of A, B and C cross HBM once; each output is one
core's dot product, so ``min(vector cores, M x N)`` cores stream their share at
the GM->UB rate of one core (capped by their share of HBM); the whole call never
runs faster than its bytes at the bandwidth catlass's GEMV reaches; plus the
kernel's fixed head.

Constants, fitted (least squares, time = head + bytes / bandwidth) to the 101
msprof timings of catlass's fp16 column-major AIV GEMV on a 20-AIC/40-AIV 910B
at 1800 MHz (hicann/catlass
examples/04_gemv_aiv/01_fp16_cm_gemv_aiv/batch_prof_data_1.csv at commit
0a8dac9deb8d7082ec6f5aa7373c645b18a2fd04, shapes 631x777 to 9538x9625,
13.2 to 239.9 us; the OpBasicInfo.csv beside it gives Block Dim 20, Mix Block
Dim 40, 1800 MHz): a 15.6 us head and 812 GB/s, 51% of that chip's 1.6 TB/s
(hardware/profiles/Ascend910B3.json). The reruns of the same example
(batch_prof_data.csv, batch_prof_data2.csv, same repository) are kept out
of the fit; tests/aicore/gemm/test_gemv.py checks the model on them.
"""

from __future__ import annotations

import math

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.workload.gemm import Gemm

GEMV_MAX_N = 8  # widest N sent to the GEMV kernel: half of the cube's 16-column fractal
GEMV_HEAD_S = 15.6e-6  # fitted: the GEMV kernel's fixed time (launch, set-up, tail)
GEMV_HBM_EFFICIENCY = 812.0 / 1600.0  # fitted: the share of HBM bandwidth a long GEMV reaches
GM_UB_BYTES_PER_CYCLE = 128.0  # msKPP TheoreticalBandwidth(), GM->UB per vector core


def runs_as_gemv(gemm: Gemm) -> bool:
    """True for the shapes a runtime sends to its GEMV kernel (see the module doc)."""
    return gemm.N <= GEMV_MAX_N


def gemv_seconds(profile: SocProfile, gemm: Gemm) -> float:
    """Seconds of one GEMV launch of ``gemm`` (every matrix of a batch)."""
    moved = gemm.min_bytes
    cores = min(profile.vector_cores, gemm.M * gemm.N * gemm.batch)
    per_core = math.ceil(moved / cores)
    core_rate = min(GM_UB_BYTES_PER_CYCLE * profile.clock_hz, profile.hbm_bandwidth() / cores)
    chip_rate = profile.hbm_bandwidth() * GEMV_HBM_EFFICIENCY
    return GEMV_HEAD_S + max(per_core / core_rate, moved / chip_rate)

