"""CANN's SwiGlu on a 910B's vector cores: its host tiling, then its kernel's tiles.

Read in hicann/ops-nn @ e5c3fa93 (``activation/swi_glu``):

* ``op_host/swi_glu_tiling.cpp``: the input is ``rows`` x 2 ``half`` (the dims before
  the split dim are rows; ``SetTotalShape``); a tile is ``baseRowLen`` rows x
  ``baseColLen`` columns of each half. ``CalcTiling`` tries double buffering first:
  a tile holds at most ``maxTileLen = UB / (buffers x 3 queues x dtype + fp32
  buffers x 4)`` elements (two fp32 buffers in fp16/bf16, one in fp32), rows padded
  to 32 B; ``CalcOptBaseShape`` starts from the whole half (cut to 512 B multiples
  when it does not fit) and walks the columns down 512 B at a time, keeping the
  shape that uses the most cores, then has the fewest tiles, then the largest tile
  (``SaveOptBaseShape``); rows per tile at most 4095 (a DataCopy's block count), and
  one row a tile when the gap between a row's two halves passes the copy's stride
  limit (``MustBeSingleBaseRowLen``). With two tiles a core it takes one buffer and
  one tile a core if that uses as many cores.
* ``op_kernel/glu_tiling_kernel.hpp``: tiles are dealt round robin over the cores
  (``tileIdx += blockNum``).
* ``op_kernel/swi_glu_single.hpp``: per tile, one DataCopy (``DataCopyPad`` when a
  half's row is not 32 B aligned) per half, each a run per row, then one for the
  output; ``swi_glu_bf16.hpp`` (fp16/bf16): cast, Muls, Exp, Adds, Div, cast of
  the second half, Mul, cast out; ``swi_glu_impl.hpp`` (fp32): Muls, Exp, Adds, Div,
  Mul, Mul; every instruction over the padded tile, each behind a PipeBarrier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aoe_optuna.aicore.pipes import vector_pipe as vp
from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile

QUEUES = 3  # two halves in, one out (XXGLU_TQUE_NUM)
FP32_BUFFERS = {"fp16": 2, "bf16": 2, "fp32": 1}  # SWIGLU_TBUF_NUM_*
MAX_ROWS = 4095  # DataCopy block count (DISCONTINE_COPY_MAX_BLOCKCNT)
MAX_BLOCK = 65535  # DataCopy block length and stride limits
LINE_BYTES = 512  # L2_CACHE_LINE_SIZE: columns are cut in multiples of a line


@dataclass(frozen=True)
class SwiGluTiling:
    """What ``Tiling4SwiGlu`` decides for one call."""

    base_rows: int
    base_cols: int
    tiles: int
    cores: int
    tiles_per_core: int
    double_buffer: bool
    tile_elements: int  # base_rows x the 32 B padded base_cols


def _align_down(n: int, unit: int) -> int:
    return 0 if n < unit else n // unit * unit


def _align_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def _max_tile(ub: int, dtype: str, buffers: int) -> int:
    per = buffers * QUEUES * DTYPE_BYTES[dtype] + FP32_BUFFERS[dtype] * 4
    return _align_down(ub // per, 32 // DTYPE_BYTES[dtype])


def _shape(profile: SocProfile, rows: int, half: int, dtype: str, buffers: int,
           ) -> tuple[int, int, int, int] | None:
    """``CalcOptBaseShape``: (base rows, base cols, tiles, cores) or None when no shape fits."""
    b = DTYPE_BYTES[dtype]
    block = 32 // b
    line = LINE_BYTES // b
    aligned = half % block == 0
    max_tile = _max_tile(profile.ub_bytes, dtype, buffers)

    def single_row(cols: int) -> bool:
        gap = half * 2 - cols
        return gap > MAX_BLOCK * block if aligned else gap * b > MAX_BLOCK

    best: tuple[tuple[int, int, int, int], int, int] | None = None  # (key, rows, cols)

    def save(base_rows: int, cols: int) -> None:
        # SaveOptBaseShape: more cores, then fewer tiles, a larger tile, more whole tiles
        nonlocal best
        tiles = math.ceil(rows / base_rows) * math.ceil(half / cols)
        key = (min(tiles, profile.vector_cores), -tiles, base_rows * cols,
               (rows // base_rows) * (half // cols))
        if best is None or key > best[0]:
            best = (key, base_rows, cols)

    up = min(half, max_tile, MAX_BLOCK if aligned else MAX_BLOCK // b)
    cols = _align_down(up, line) if line < up < half else up
    if single_row(cols):
        save(1, cols)
    else:
        row_bound = min(rows, MAX_ROWS)
        while True:
            base_rows = min(max_tile // _align_up(cols, block), row_bound)
            if base_rows < 1 or (base_rows > 1 and single_row(cols)):
                break
            if not (base_rows > 1 and single_row(half % cols)):  # isValidTailCol
                save(base_rows, cols)
            if cols <= line or base_rows >= row_bound:
                break
            cols = cols - line if cols % line == 0 else _align_down(cols, line)
    if best is None:
        return None
    _, base_rows, cols = best
    tiles = math.ceil(rows / base_rows) * math.ceil(half / cols)
    return base_rows, cols, tiles, min(tiles, profile.vector_cores)


def tiling(profile: SocProfile, rows: int, half: int, dtype: str) -> SwiGluTiling:
    """CANN's SwiGlu tiling for ``rows`` x 2 ``half`` of ``dtype`` (swi_glu_tiling.cpp)."""
    shape = _shape(profile, rows, half, dtype, 2)
    if shape is None:
        raise ValueError(f"swiglu {rows}x{2 * half} {dtype}: no tile fits UB")
    double = True
    if math.ceil(shape[2] / shape[3]) == 2:  # two tiles a core: one buffer, one tile?
        single = _shape(profile, rows, half, dtype, 1)
        if single and math.ceil(single[2] / single[3]) == 1 and single[3] >= shape[3]:
            shape, double = single, False
    base_rows, cols, tiles, cores = shape
    block = 32 // DTYPE_BYTES[dtype]
    return SwiGluTiling(base_rows, cols, tiles, cores, math.ceil(tiles / cores), double,
                        base_rows * _align_up(cols, block))


@dataclass(frozen=True)
class SwiGluCost:
    """Seconds of one call (busiest core) and one tile's parts."""

    total_s: float
    copy_in_s: float  # both halves
    compute_s: float
    copy_out_s: float
    chip_s: float
    tiling: SwiGluTiling


def _tile_cycles(elements: int, dtype: str) -> float:
    """One tile's vector cycles: silu(a) * b over the padded tile in fp32."""
    c_in, c_out = vp.cast_in(dtype), vp.cast_out(dtype)
    ops = ["muls", "exp", "adds", "div", "mul"] + (["mul"] if c_in is None else [])
    cycles = sum(float(vp.instruction_cycles(op, elements)) for op in ops)
    if c_in is not None:
        cycles += 2 * float(vp.instruction_cycles(c_in, elements))
    if c_out is not None:
        cycles += float(vp.instruction_cycles(c_out, elements))
    return cycles


def swiglu_cost(profile: SocProfile, rows: int, half: int, dtype: str) -> SwiGluCost:
    """Seconds of CANN's SwiGlu with ``rows`` rows of two ``half``-wide halves."""
    t = tiling(profile, rows, half, dtype)
    b = DTYPE_BYTES[dtype]
    cores = float(t.cores)
    run = t.base_cols * b
    tile_bytes = t.base_rows * run
    one_half = float(vp.copy_seconds(profile, tile_bytes, run, 2 * half * b, cores))
    copy_in = 2 * one_half  # the halves one after the other on MTE2
    copy_out = float(vp.copy_seconds(profile, tile_bytes, run, half * b, cores, True))
    compute = _tile_cycles(t.tile_elements, dtype) / profile.clock_hz
    n = t.tiles_per_core
    if t.double_buffer:  # each queue two deep: the slowest stage sets the pace
        core_s = copy_in + (n - 1) * max(copy_in, compute, copy_out) + compute + copy_out
    else:
        core_s = n * (copy_in + compute + copy_out)
    # a tile's rows, both halves in and the output out, a DataCopyPad burst each when a
    # half's row is not 32 B aligned
    core_s += vp.pad_bursts_s(profile, vp.pad_bursts(3 * n * t.base_rows, run))
    chip = float(vp.chip_floor_s(profile, float(rows * 2 * half * b), float(rows * half * b)))
    return SwiGluCost(KERNEL_LAUNCH_S + max(core_s, chip), copy_in, compute, copy_out, chip, t)


def swiglu_seconds(profile: SocProfile, rows: int, half: int, dtype: str) -> float:
    return swiglu_cost(profile, rows, half, dtype).total_s
