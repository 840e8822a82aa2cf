"""What shapes the simple kernel takes, and which of its copies go row by row.

The GM -> L1 copies take 16-bit strides: ``Nd2NzParams.srcDValue`` (the row
stride of A or B in elements) and ``DataCopyParams.srcStride`` (the gap between
bursts, in 32-byte blocks) hold at most 65535. Past that the kernel copies one
row (row_major) or one burst (z_major) per call, as catlass does past its
``STRIDE_LIMIT`` (include/catlass/gemm/tile/copy_gm_to_l1.hpp): correct, but
slower; :func:`copy_plan` says where, so a measurement can carry it. GM
offsets are 64-bit in the kernel. What remains refused is what the host
program takes: dimensions 1 .. 2^24 and K a multiple of 16.

The constants mirror ``gemm_kernel.cpp`` (``STRIDE_LIMIT``) and ``main.cpp``;
a test checks the kernel's value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STRIDE_LIMIT = 65536  # strides must stay below: 16-bit fields
MAX_DIM = 1 << 24  # what the host program accepts per dimension
FRACTAL = 16


def shape_reason(m: int, k: int, n: int) -> str | None:
    """Why the simple kernel's host program refuses this GEMM, or None."""
    for name, value in (("M", m), ("K", k), ("N", n)):
        if not 1 <= value <= MAX_DIM:
            return f"{name}={value}: the simple kernel takes dimensions 1 .. {MAX_DIM} (2^24)"
    if k % FRACTAL:
        return f"K={k}: the Ascend C kernel needs K to be a multiple of {FRACTAL}"
    return None


def copy_plan(config: Mapping[str, Any], m: int, k: int, n: int) -> dict[str, str]:
    """How each GM -> L1 copy runs for this shape: ``"one"`` call, ``"per_row"`` or ``"per_block"``.

    row_major: A's row stride is K, B's is N (``srcDValue``, elements).
    z_major: a C0 column of A holds ``mPad`` rows of one 32-byte block each, so the
    gap between A's bursts is below ``mPad``; B's is below ``K`` (``srcStride``,
    blocks). The kernel tests ``mPad`` and ``K``, the largest gaps a tile meets.
    """
    if config["layout"] == "z_major":
        m_pad = -(-m // FRACTAL) * FRACTAL
        return {"a": "per_block" if m_pad >= STRIDE_LIMIT else "one",
                "b": "per_block" if k >= STRIDE_LIMIT else "one"}
    return {"a": "per_row" if k >= STRIDE_LIMIT else "one",
            "b": "per_row" if n >= STRIDE_LIMIT else "one"}
