"""Work the vector cores do around the cube's GEMM: split-K sums, int8 dequant, padding.

catlass runs these as the AIV half of a mixed kernel, each a pass over GM
that waits for the cube (a cross-core flag) before it starts:

* split-K (``SplitkMatmul``): each split writes fp32 partials of C to a
  workspace; the vector cores read every split's partial, sum them and write
  C in the output dtype;
* int8 (``QuantMatmul``): the cube writes int32 C to a workspace; the vector
  cores read it with the per-row and per-column scales and write fp16 C. The
  hand-over is per block (catlass ``kernel/quant_matmul.hpp``: the AIC sets
  ``flagAicFinishStore`` after each block, the same core's two AIVs wait on
  it and dequantize that block while the cube goes on with the next), so
  the epilogue runs under the cube and shows once, after the last block
  (:func:`dequant_block_seconds`); with split-K the vector cores first sum
  the partials, then, behind another all-core barrier, dequantize the summed
  C block by block, each AI core's pair taking the blocks its cube would
  (``kernel/quant_multi_core_splitk_matmul_tla.hpp``, the example's "Plan B"),
  so the busiest core's blocks show;
* padding (``PaddingMatmul``): before the cube starts, the vector cores copy
  A and B into buffers whose rows are 512 B aligned, so every later load
  starts on a line.

A pass moves its bytes at the vector cores' share of the memory system (the
smaller of their own GM bandwidth and the L2/HBM floor the caller gives) and
pays a fixed cost for the cross-core hand-over (``pipes/launch.py``).
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.aicore.pipes.transfer import LINE_BYTES, StreamCosts

WORKSPACE_BYTES = 4  # fp32 partials / int32 accumulators in GM
AIV_PER_CORE = 2  # dav-c220: two vector cores per AI core (the profile's vector/cube cores)


def split_k_bytes(splits: np.ndarray, m: int, n: int, out_bytes: float) -> np.ndarray:
    """GM bytes of the split-K sum: write and read every split's partial, write C."""
    partials = splits * m * n * WORKSPACE_BYTES
    return np.where(splits > 1, 2.0 * partials + m * n * out_bytes, 0.0)


def per_block_dequant(quant: np.ndarray, splits: np.ndarray) -> np.ndarray:
    """int8 without split-K: the epilogue is handed over block by block (see above)."""
    return quant & (splits <= 1)


def dequant_block_seconds(
    stream: StreamCosts, rows: np.ndarray, cols: np.ndarray, n: int, out_bytes: float,
) -> np.ndarray:
    """One block's int8 epilogue on its core's two vector cores, each taking half the rows.

    Each reads its int32 rows from the workspace (just written by FixPipe, so
    from L2) and writes them back in the output dtype: one run per row, read
    and written through the same per-core streaming costs as the cube's loads.
    """
    half = np.ceil(rows / AIV_PER_CORE)
    read = stream.seconds(half * cols * WORKSPACE_BYTES, cols * WORKSPACE_BYTES,
                          np.full_like(cols, n * WORKSPACE_BYTES), np.zeros_like(cols))
    write = stream.seconds(half * cols * out_bytes, cols * out_bytes,
                           np.full_like(cols, n * out_bytes), np.zeros_like(cols))
    return read + write


def padding_bytes(
    pad: np.ndarray, a_bytes: float | np.ndarray, a_stride: np.ndarray,
    b_bytes: float | np.ndarray, b_stride: np.ndarray,
) -> np.ndarray:
    """GM bytes of the padding pre-pass: each operand whose rows are not 512 B aligned
    is read once and written padded (aligned operands are used in place)."""
    a = np.where(np.mod(a_stride, LINE_BYTES) != 0, 2.0 * a_bytes, 0.0)
    b = np.where(np.mod(b_stride, LINE_BYTES) != 0, 2.0 * b_bytes, 0.0)
    return np.where(pad, a + b, 0.0)


def handovers(splits: np.ndarray, quant: np.ndarray, pad: np.ndarray) -> np.ndarray:
    """Cube <-> vector hand-overs a kernel pays (one per pass; the per-block int8
    epilogue's shows once, after the last block)."""
    return (splits > 1).astype(float) + quant.astype(float) + pad.astype(float)


def uses_vector_cores(splits: np.ndarray, quant: np.ndarray, pad: np.ndarray) -> np.ndarray:
    """A mixed (cube + vector) kernel: it starts the vector cores too, and pays for it."""
    return (splits > 1) | quant | pad


def aligned(stride_bytes: np.ndarray) -> np.ndarray:
    """A row stride rounded up to the 512 B the padding kernel aligns rows to."""
    return np.ceil(stride_bytes / LINE_BYTES) * LINE_BYTES
