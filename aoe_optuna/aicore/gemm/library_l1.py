"""How deep CANN's library matmul queues A and B in L1: its own queue per operand.

CANN's MatMulV3 (what ``aclnnMatmul``, ``torch.mm`` on torch_npu, calls) runs the
Ascend C Matmul API, which holds A and B in L1 queues of their own rather than in
one joint stage as catlass's templates do. Read in hicann/ops-nn @ e5c3fa93,
``matmul/mat_mul_v3/op_host/op_tiling/matmul_v3_base_tiling.cpp``, ``CalL1Tiling``
and ``UpdateL1TilingStepK``:

* each operand gets half of L1 (plus the 256 B kept for rpc), in units of one base
  block's K step: ``depthA1 = (L1 + 256) / 2 / (baseM baseK b)``, ``depthB1`` the same
  with ``baseN``; where both do not fit, the operand with the smaller base halves;
* double buffered: ``stepKa = depthA1 / 2``, ``stepKb = depthB1 / 2`` K steps a load;
* a load of more than 512 B a row (256 B) is cut back to whole 512 B (256 B) rows,
  unless it already spans K; then the deeper queue is rounded down to a whole
  multiple of the shallower one.

For the 910B's 128 x 256 fp16 base with ``baseK`` 64 that is 8 K steps of A (512
deep) and 4 of B (256) a load: A's start-up is paid over twice the K that B's is.
"""

from __future__ import annotations

import numpy as np

RPC_BYTES = 256  # L1 bytes kept for rpc, added back by CalL1Tiling
DOUBLE_BUFFER = 2


def _aligned_step(step: np.ndarray, base_k: np.ndarray, elem: np.ndarray,
                  k: int) -> np.ndarray:
    """``UpdateL1TilingStepK``: a load of more than 512 B a row (256 B) cut down to whole
    512 B (256 B) where one K step's bytes divide that, unless the load spans K."""
    row = base_k * elem
    nbytes = step * row
    unit = np.where(nbytes > 512.0, 512.0, np.where(nbytes > 256.0, 256.0, 0.0))
    fix = ((unit > 0) & (step * base_k < k) & (np.mod(unit, row) == 0)
           & (np.mod(nbytes, np.maximum(unit, 1.0)) != 0))
    per = np.maximum(unit / row, 1.0)
    return np.where(fix, np.maximum(np.floor(step / per) * per, 1.0), step)


def queue_depths(l1_bytes: int, rows_a: np.ndarray, rows_b: np.ndarray, base_k: np.ndarray,
                 elem: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) K elements one load of each operand's L1 queue holds, at most K."""
    total = float(l1_bytes + RPC_BYTES)
    step_bytes_a = rows_a * base_k * elem
    step_bytes_b = rows_b * base_k * elem
    depth_a = np.floor(total / 2 / step_bytes_a)
    depth_b = np.floor(total / 2 / step_bytes_b)
    over = depth_a * step_bytes_a + depth_b * step_bytes_b > total
    halve_a = over & (rows_a <= rows_b)
    depth_a = np.where(halve_a, np.floor(depth_a / 2), depth_a)
    depth_b = np.where(over & ~halve_a, np.floor(depth_b / 2), depth_b)
    step_a = np.maximum(np.floor(depth_a / DOUBLE_BUFFER), 1.0)
    step_b = np.maximum(np.floor(depth_b / DOUBLE_BUFFER), 1.0)
    step_a = _aligned_step(step_a, base_k, elem, k)
    step_b = _aligned_step(step_b, base_k, elem, k)
    step_a = np.where(step_a >= step_b, np.floor(step_a / step_b) * step_b, step_a)
    step_b = np.where(step_b > step_a, np.floor(step_b / step_a) * step_a, step_b)
    return np.minimum(step_a * base_k, k), np.minimum(step_b * base_k, k)
