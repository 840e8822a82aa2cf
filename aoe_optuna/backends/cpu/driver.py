"""The cpu backend's driver: one process per candidate, run as ``python -m``.

It loads the candidate's shared library, makes seeded inputs representable in
the GEMM's dtype, converts them to the candidate's layout (outside the timed
region, as a library pre-packs weights), calls the kernel once and checks the
result against numpy, times it (policy: :mod:`aoe_optuna.backends.timing`),
checks the result again, and prints one JSON line. Exit status
:data:`~aoe_optuna.backends.kernel_build.process.EXIT_WRONG_RESULT` means the
result was wrong; a crash or hang is seen by the parent.

Numerics: fp16/bf16/fp32 GEMMs compute in fp32 on the CPU (no fast fp16
here); inputs are rounded to the dtype first, so they are what the NPU would
see. The reference is numpy in float64. A quantized config quantizes A and B
per tensor to int8 (symmetric, scale = max|x| / 127) and accumulates in
int32: its output is checked against numpy's exact integer product of the
same int8 values, and its loss against the unquantized reference is reported
as ``accuracy_loss`` (relative Frobenius error).

``--fault`` is a test-only switch that injects a failure: ``segfault`` passes
a NULL output pointer to the kernel (a real SIGSEGV inside it), ``hang``
never returns, ``wrong`` corrupts one output element after each call.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time

import numpy as np

from aoe_optuna.backends.kernel_build.process import EXIT_WRONG_RESULT
from aoe_optuna.backends.timing import (
    CLOCKS,
    ESTIMATORS,
    TimingPolicy,
    median_interval,
    time_call,
)

FP32_EPS = 2.0**-23
FAULTS = ("segfault", "hang", "wrong")


def round_to_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """fp32 values exactly representable in ``dtype``."""
    if dtype == "fp16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        bits = x.astype(np.float32).view(np.uint32)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & np.uint32(0xFFFF0000)
        return rounded.view(np.float32)
    if dtype == "int8":
        return np.clip(np.round(x * 32), -127, 127).astype(np.float32)
    return x.astype(np.float32)


def quantize(x: np.ndarray) -> tuple[np.ndarray, float]:
    scale = float(np.max(np.abs(x))) / 127.0 or 1.0
    return np.clip(np.round(x / scale), -127, 127).astype(np.int8), scale


def to_layout(x: np.ndarray, layout: str, rows: int, cols: int) -> np.ndarray:
    """``x`` stored as the kernel reads it: row-major, column-major or in padded blocks."""
    if layout == "row_major":
        return np.ascontiguousarray(x)
    if layout == "col_major":
        return np.ascontiguousarray(x.T)
    r, c = x.shape
    rb, cb = -(-r // rows), -(-c // cols)
    padded = np.zeros((rb * rows, cb * cols), dtype=x.dtype)
    padded[:r, :c] = x
    return np.ascontiguousarray(padded.reshape(rb, rows, cb, cols).transpose(0, 2, 1, 3))


def output_buffer(m: int, n: int, aligned: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """(storage, C view, ldc); aligned: 64-byte base and rows padded to 16 floats."""
    if not aligned:
        c = np.zeros((m, n), dtype=np.float32)
        return c, c, n
    ldc = -(-n // 16) * 16
    raw = np.zeros(m * ldc + 16, dtype=np.float32)
    offset = (-raw.ctypes.data % 64) // 4
    storage = raw[offset : offset + m * ldc]
    return raw, storage.reshape(m, ldc)[:, :n], ldc


def max_error(c: np.ndarray, expected: np.ndarray, bound: np.ndarray) -> float:
    """Largest |c - expected| relative to the largest entry of |A| @ |B|."""
    return float(np.max(np.abs(c - expected)) / max(float(np.max(bound)), 1e-30))


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m aoe_optuna.backends.cpu.driver")
    p.add_argument("library")
    for dim in ("M", "K", "N", "tile_m", "tile_n", "tile_k"):
        p.add_argument(f"--{dim}", type=int, required=True)
    p.add_argument("--dtype", default="fp16", choices=("fp16", "bf16", "fp32", "int8"))
    p.add_argument("--layout", default="row_major", choices=("row_major", "col_major", "z_major"))
    p.add_argument("--quantized", type=int, default=0, choices=(0, 1))
    p.add_argument("--output-align", type=int, default=0, choices=(0, 1))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--min-repeats", type=int, default=3)
    p.add_argument("--max-repeats", type=int, default=50)
    p.add_argument("--rel-precision", type=float, default=0.02)
    p.add_argument("--max-seconds", type=float, default=1.0)
    p.add_argument("--stop-above", type=float, default=None,
                   help="the incumbent's latency (s): stop timing once clearly above it")
    p.add_argument("--stop-margin", type=float, default=0.10)
    p.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                   help="wall time, or the timing thread's CPU time")
    p.add_argument("--estimator", choices=ESTIMATORS, default="median",
                   help="what the timing reports: the median, or the minimum over the window")
    p.add_argument("--fault", choices=FAULTS, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    m, k, n = a.M, a.K, a.N
    rng = np.random.default_rng(a.seed)
    A = round_to_dtype(rng.standard_normal((m, k), dtype=np.float32), a.dtype)
    B = round_to_dtype(rng.standard_normal((k, n), dtype=np.float32), a.dtype)
    reference = A.astype(np.float64) @ B.astype(np.float64)
    bound = np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
    scale = 1.0
    if a.quantized:
        (qa, sa), (qb, sb) = quantize(A), quantize(B)
        scale = sa * sb
        expected = (qa.astype(np.int64) @ qb.astype(np.int64)) * scale
        bound = (np.abs(qa).astype(np.int64) @ np.abs(qb).astype(np.int64)) * scale
        ka, kb = to_layout(qa, a.layout, a.tile_m, a.tile_k), to_layout(qb, a.layout, a.tile_k,
                                                                          a.tile_n)
    else:
        expected = reference
        ka, kb = to_layout(A, a.layout, a.tile_m, a.tile_k), to_layout(B, a.layout, a.tile_k,
                                                                        a.tile_n)
    _storage, c, ldc = output_buffer(m, n, bool(a.output_align))

    lib = ctypes.CDLL(a.library)
    kernel = lib.aoe_gemm
    kernel.restype = None
    kernel.argtypes = [ctypes.c_long] * 3 + [ctypes.c_void_p] * 3 + [ctypes.c_long, ctypes.c_float]
    out_ptr = None if a.fault == "segfault" else c.ctypes.data
    a_ptr, b_ptr = ka.ctypes.data, kb.ctypes.data

    def call() -> None:
        kernel(m, n, k, a_ptr, b_ptr, out_ptr, ldc, scale)
        if a.fault == "wrong":
            c[m // 2, n // 2] += 1.0 + abs(float(c[m // 2, n // 2]))
        while a.fault == "hang":
            time.sleep(1.0)

    tol = 4.0 * max(k, 16) * FP32_EPS  # worst-case fp32 accumulation error, relative

    def wrong(when: str) -> bool:
        err = max_error(c, expected, bound)
        errors.append(err)
        if err <= tol:  # NaN fails too
            return False
        i, j = np.unravel_index(np.argmax(np.abs(c - expected)), c.shape)
        print(f"wrong result ({when}): max error {err:.3g} of max |A||B| > tolerance "
              f"{tol:.3g}; C[{i},{j}] = {c[i, j]:.6g}, expected {expected[i, j]:.6g}",
              file=sys.stderr)
        return True

    errors: list[float] = []
    call()
    if wrong("first call"):
        return EXIT_WRONG_RESULT
    timing = time_call(call, TimingPolicy(a.warmup, a.min_repeats, a.max_repeats,
                                          a.rel_precision, a.max_seconds, a.stop_above,
                                          a.stop_margin, a.estimator), a.clock)
    if wrong("after timing"):
        return EXIT_WRONG_RESULT
    loss = float(np.linalg.norm(c - reference) / max(float(np.linalg.norm(reference)), 1e-30))
    print(json.dumps({
        "latency_s": timing.estimate_s,
        "median_s": timing.median_s,
        "spread": timing.spread,
        "precision": timing.precision,
        "repeats": timing.repeats,
        "cut_short": timing.cut_short,
        "interval_s": list(median_interval(timing.samples)),
        "samples_s": list(timing.samples),
        "max_error": max(errors),
        "tolerance": tol,
        "accuracy_loss": loss,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
