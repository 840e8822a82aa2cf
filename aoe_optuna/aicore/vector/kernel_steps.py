"""The project's own vector kernel, step by step: the instructions each step issues,
priced at the vector unit's measured rates.

Read in ``backends/npu/layer_kernels/templates/vector_kernel.cpp`` (the kernel an
operator run tunes and exports; fp16/bf16 in GM, fp32 in UB):

* a norm row (``NormRow``): ``LoadRowPiece`` casts x up (add + RMSNorm: casts the
  residual up, adds, and when fused casts the sum down for its copy-out);
  ``SumOfSquares`` a Mul and a ``ReduceSum``, then the scalar reads the sum (V->S);
  ``Rstd`` a Duplicate and a Sqrt of 8 lanes, read back by the scalar again;
  ``ScalePiece`` casts gamma up (copied in for every row or piece), Muls by rstd,
  Mul by gamma, casts down;
* a SwiGLU tile (``SwiGluTile``): cast of the gate, Muls, Exp, Adds, Div, cast of
  the up half, Mul, cast down;
* the residual add of an unfused norm (``ProcessAdd``): two casts up, Add, cast down;
* a rope piece (``RopePiece``): cast of x; per head two Muls of half a head (the
  rotated half); cos then sin, 64 floats at a time, a cast of the step and a Mul per
  head; an Add over the piece and the cast down.

Each instruction costs what :mod:`aoe_optuna.aicore.pipes.vector_pipe` says (msKPP's
measured rate of its op and dtype, and the issue cost); nothing here is set from a
kernel's timing.
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.aicore.pipes import vector_pipe as vp

Cycles = np.ndarray
RSTD_LANES = 8  # Rstd's Duplicate and Sqrt span one 32 B block of fp32
COS_SIN_STEP = 64  # rope: cos/sin floats cast at a time


def _op(op: str | None, elements: np.ndarray | float) -> Cycles:
    """One instruction of ``op`` over ``elements`` (0 for a cast fp32 does not need)."""
    if op is None:
        return np.zeros_like(np.asarray(elements, dtype=float))
    return vp.instruction_cycles(op, elements)


def reduce_sum_cycles(elements: np.ndarray | float) -> Cycles:
    """``ReduceSum`` over ``elements`` fp32: WholeReduceSum repeats of 64 lanes, level
    after level until one value is left."""
    n = np.maximum(np.asarray(elements, dtype=float), 1.0)
    cycles = np.zeros_like(n)
    while True:
        repeats = np.ceil(n / vp.FP32_PER_REPEAT)
        cycles = cycles + np.where(n > 1, vp.repeat_cycles("reduce", repeats), 0.0)
        n = np.where(n > 1, repeats, 1.0)
        if np.all(n <= 1):
            return cycles


def norm_load_cycles(dtype: str, elements: np.ndarray | float, adds: bool,
                     writes_sum: bool) -> Cycles:
    """``LoadRowPiece``: x up to fp32; with the residual (fused add + RMSNorm) its cast,
    the Add and, on the first read of the piece, the sum cast down for its copy-out."""
    cycles = _op(vp.cast_in(dtype), elements)
    if adds:
        cycles = cycles + _op(vp.cast_in(dtype), elements) + _op("add", elements)
        if writes_sum:
            cycles = cycles + _op(vp.cast_out(dtype), elements)
    return cycles


def sum_of_squares_cycles(elements: np.ndarray | float) -> Cycles:
    """``SumOfSquares``: the squares, then their sum (the scalar waits on it)."""
    return _op("mul", elements) + reduce_sum_cycles(elements)


def rstd_cycles() -> float:
    """``Rstd``: a Duplicate and a Sqrt (at Div's rate) of one block."""
    return float(vp.instruction_cycles("dup", RSTD_LANES) + vp.instruction_cycles(
        "div", RSTD_LANES))


def norm_scale_cycles(dtype: str, elements: np.ndarray | float) -> Cycles:
    """``ScalePiece``: gamma up to fp32, the scale by rstd and by gamma, the cast down."""
    return (_op(vp.cast_in(dtype), elements) + _op("muls", elements) + _op("mul", elements)
            + _op(vp.cast_out(dtype), elements))


def swiglu_tile_cycles(dtype: str, elements: np.ndarray | float) -> Cycles:
    """``SwiGluTile``: silu(gate) * up in fp32, both casts up and the one down."""
    up, down = vp.cast_in(dtype), vp.cast_out(dtype)
    body = sum((_op(op, elements) for op in ("muls", "exp", "adds", "div", "mul")),
               start=np.zeros_like(np.asarray(elements, dtype=float)))
    return body + 2 * _op(up, elements) + _op(down, elements)


def add_tile_cycles(dtype: str, elements: np.ndarray | float) -> Cycles:
    """``ProcessAdd``: both inputs up, the Add, the cast down."""
    return (2 * _op(vp.cast_in(dtype), elements) + _op("add", elements)
            + _op(vp.cast_out(dtype), elements))


def rope_piece_cycles(dtype: str, elements: np.ndarray | float, head_dim: int) -> Cycles:
    """``RopePiece`` over ``elements`` of one token (whole heads): the rotated half as two
    Muls a head, then for cos and sin each 64-float step cast once and applied by a Mul
    a head, an Add over the piece, the casts up and down."""
    n = np.asarray(elements, dtype=float)
    heads = np.ceil(n / head_dim)
    rotate = heads * 2 * _op("muls", head_dim / 2)
    steps = 2 * np.ceil(head_dim / COS_SIN_STEP)
    step = min(COS_SIN_STEP, head_dim)
    trig = steps * (_op(vp.cast_in(dtype), step) + heads * _op("mul", step))
    return (_op(vp.cast_in(dtype), n) + rotate + trig + _op("add", n)
            + _op(vp.cast_out(dtype), n))
