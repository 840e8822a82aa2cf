"""CANN's RmsNorm on a 910B's vector cores: its host tiling, then its kernel's passes.

Read in hicann/ops-nn @ e5c3fa93 (``norm/rms_norm``), x and gamma of one dtype:

* ``op_host/rms_norm_tiling.cpp``, ``Tiling4RmsNorm`` (lines 420-483): each core
  takes ``blockFactor = ceil(rows / AIV cores)`` consecutive rows and
  ``ceil(rows / blockFactor)`` cores launch; a row is padded to 32 B
  (``numColAlign``, line 352); the kernel follows the padded width: MergeN up to
  2000 elements (``SMALL_REDUCE_NUM``, 910B only), SplitD above the UB factor
  (12288 fp16/bf16, 10240 fp32 elements), Normal between; MergeN takes
  ``rowFactor = (UB - 1 KiB) // (16 numColAlign + 260)`` rows a pass (line 469).
* ``op_kernel/rms_norm_base.h`` line 39: ``BUFFER_NUM = 1``: no queue is double
  buffered, so a pass's copy-in waits for the previous pass to free its buffer
  (after the input's cast in fp16/bf16, after the scaling in fp32) and its last
  instruction waits for the previous copy-out.
* ``op_kernel/rms_norm.h`` (Normal, ``Compute``): one row a pass: cast, square,
  ``ReduceSumHalfInterval`` (``reduce_common.h``: an Add per halving down to 64
  lanes, then WholeReduceSum), the sum to the scalar unit for 1/sqrt and back,
  scale by rstd, cast gamma (every row), multiply, cast out.
* ``op_kernel/rms_norm_merge_n.h`` (MergeN; the tiling sets ``normal_flag`` 0, so
  ``Compute``): each instruction spans the pass's rows; the sum of squares is one Add
  per 64 columns with a repeat a row (``ReduceSumMultiN``) and a WholeReduceSum
  repeat a row; rstd on the vector unit (Muls, Adds, Sqrt, Duplicate, Div over the
  rows), broadcast back over the rows, then two multiplies and the cast.
* ``op_kernel/rms_norm_split_d.h`` (SplitD): a row in UB-sized pieces, read once
  for the sum and again to scale it.

Not modelled: the ``isPerformance`` variant of MergeN (a Brcb instead of the
generic broadcast for 2-D/3-D fp16/bf16 inputs of at most 512 leading rows: the
problem here has rows, not the tensor's dims) and mixed x/gamma dtypes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aoe_optuna.aicore.pipes import vector_pipe as vp
from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile

MERGE_N_MAX = 2000  # SMALL_REDUCE_NUM: MergeN up to this padded width (910B)
UB_FACTOR = {"fp16": 12288, "bf16": 12288, "fp32": 10240}  # UB_FACTOR_B16 / _B32
UB_RESERVED = 1024  # UB_USED
MERGE_N_BYTES_PER_ELEMENT = 16  # numColAlignWeight
MERGE_N_BYTES_PER_ROW = 260
NORMAL_TAIL_ISSUES = {False: 2, True: 4}  # a Normal row's vector instructions after its sum
# (by whether the input is cast: fp16/bf16 True)


@dataclass(frozen=True)
class RmsNormTiling:
    """What ``Tiling4RmsNorm`` decides for one call."""

    mode: str  # "merge_n", "normal" or "split_d"
    cores: int
    rows_per_core: int  # blockFactor: the busiest core's rows
    col_align: int  # numColAlign: the row padded to 32 B
    rows_per_pass: int  # MergeN's rowFactor; 1 otherwise
    piece: int  # SplitD's columns a piece; the padded row otherwise


def tiling(profile: SocProfile, rows: int, width: int, dtype: str) -> RmsNormTiling:
    """CANN's RmsNorm tiling on a 910B (rms_norm_tiling.cpp, same-dtype branch)."""
    align = 32 // DTYPE_BYTES[dtype]
    col_align = math.ceil(width / align) * align
    block = math.ceil(rows / profile.vector_cores)
    cores = math.ceil(rows / block)
    if col_align <= MERGE_N_MAX:
        ub = profile.ub_bytes - UB_RESERVED
        per_pass = ub // (col_align * MERGE_N_BYTES_PER_ELEMENT + MERGE_N_BYTES_PER_ROW)
        return RmsNormTiling("merge_n", cores, block, col_align, max(1, per_pass), col_align)
    factor = UB_FACTOR[dtype]
    if col_align > factor:  # split the row evenly into 16-aligned pieces
        pieces = math.ceil(width / factor)
        piece = math.ceil(width / (pieces * 16)) * 16
        return RmsNormTiling("split_d", cores, block, col_align, 1, piece)
    return RmsNormTiling("normal", cores, block, col_align, 1, col_align)


@dataclass(frozen=True)
class RmsNormCost:
    """Seconds of one call (busiest core) and its parts."""

    total_s: float
    copy_in_s: float  # one pass's copy-in
    compute_s: float  # one pass's vector and scalar work
    copy_out_s: float
    passes: int
    chip_s: float  # the call's HBM floor
    tiling: RmsNormTiling


def _casts(dtype: str, elements: float) -> tuple[float, float]:
    """Cycles of the input's cast to fp32 and the result's cast back (0 in fp32)."""
    c_in, c_out = vp.cast_in(dtype), vp.cast_out(dtype)
    return (float(vp.instruction_cycles(c_in, elements)) if c_in else 0.0,
            float(vp.instruction_cycles(c_out, elements)) if c_out else 0.0)


def halving_sum_cycles(width: int) -> float:
    """``ReduceSumHalfInterval`` over one row: the tail folded onto the largest power of
    two, an Add per halving down to 64 lanes, then one WholeReduceSum."""
    if width <= vp.FP32_PER_REPEAT:
        return float(vp.repeat_cycles("reduce", 1))
    body = 1 << (width.bit_length() - 1)
    cycles = float(vp.instruction_cycles("add", width - body)) if width > body else 0.0
    while body > vp.FP32_PER_REPEAT:
        body //= 2
        cycles += float(vp.instruction_cycles("add", body))
    return cycles + float(vp.repeat_cycles("reduce", 1))


def _normal_row_cycles(width: int, dtype: str) -> tuple[float, float]:
    """One Normal row's vector and scalar cycles, and the cycles before the next row's
    copy-in can leave."""
    cast_x, cast_y = _casts(dtype, width)
    cast_gamma = cast_x  # gamma is cast every row in fp16/bf16 (ComputeMulGammaCast)
    square = float(vp.instruction_cycles("mul", width))
    scale = float(vp.instruction_cycles("muls", width))
    gamma = float(vp.instruction_cycles("mul", width))
    summed = cast_x + square + halving_sum_cycles(width) + vp.SCALAR_ROUND_TRIP_CYCLES
    total = summed + scale + cast_gamma + gamma + cast_y
    # the scalar unit waits for the row's sum (V->S) before it issues anything more, then
    # issues in program order the row's last vector instructions (Muls, gamma's cast and
    # Mul, the cast out: four in fp16/bf16; Muls and Mul in fp32) and its copy-out before
    # the next row's copy-in, which also waits for the input buffer (free after the cast
    # in fp16/bf16, after the scaling in fp32)
    issued = (NORMAL_TAIL_ISSUES[dtype != "fp32"] + 1) * vp.ISSUE_CYCLES
    frees_input = summed + (issued if dtype != "fp32" else max(issued, scale))
    return total, frees_input


def _merge_n_pass_cycles(rows: int, width: int, col_align: int, dtype: str,
                         ) -> tuple[float, float]:
    """One MergeN pass over ``rows`` rows: vector cycles, and those before its input
    buffer is free."""
    elements = rows * col_align
    cast_x, cast_y = _casts(dtype, elements)
    square = float(vp.instruction_cycles("mul", elements))
    chunks = width // vp.FP32_PER_REPEAT + (1 if width % vp.FP32_PER_REPEAT else 0)
    sums = (float(vp.instruction_cycles("dup", rows * vp.FP32_PER_REPEAT))
            + chunks * float(vp.repeat_cycles("add", rows))
            + float(vp.repeat_cycles("reduce", rows)))
    rstd = (float(vp.instruction_cycles("muls", rows)) + float(vp.instruction_cycles("adds", rows))
            + 2 * float(vp.instruction_cycles("div", rows))  # Sqrt (Div's rate), Div
            + float(vp.instruction_cycles("dup", rows)))
    broadcast = float(vp.instruction_cycles("dup", elements))  # rstd over the rows
    scale = 2 * float(vp.instruction_cycles("mul", elements))  # by rstd, by gamma
    total = cast_x + square + sums + rstd + broadcast + scale + cast_y
    # fp16/bf16 free the input once cast; fp32 once scaled by rstd, before gamma's Mul
    frees_input = cast_x if dtype != "fp32" else total - scale / 2
    return total, frees_input


def _split_d_row_cycles(width: int, piece: int, dtype: str) -> float:
    """One SplitD row: per piece a cast, square and halving sum, then per piece again a
    cast, scale, cast of gamma, multiply and cast out."""
    pieces = math.ceil(width / piece)
    cast_x, cast_y = _casts(dtype, piece)
    first = cast_x + float(vp.instruction_cycles("mul", piece)) + halving_sum_cycles(piece)
    second = (2 * cast_x + float(vp.instruction_cycles("muls", piece))
              + float(vp.instruction_cycles("mul", piece)) + cast_y)
    return pieces * (first + second) + vp.SCALAR_ROUND_TRIP_CYCLES


def rms_norm_cost(profile: SocProfile, rows: int, width: int, dtype: str) -> RmsNormCost:
    """Seconds of CANN's RmsNorm over ``rows`` x ``width`` of ``dtype`` on ``profile``."""
    t = tiling(profile, rows, width, dtype)
    b = DTYPE_BYTES[dtype]
    clock = profile.clock_hz
    row_bytes = width * b
    cores = float(t.cores)
    if t.mode == "merge_n":
        per_pass = min(t.rows_per_pass, t.rows_per_core)
        passes = math.ceil(t.rows_per_core / per_pass)
        nbytes = per_pass * row_bytes
        copy_in = float(vp.copy_seconds(profile, nbytes, row_bytes, row_bytes, cores))
        copy_out = float(vp.copy_seconds(profile, nbytes, row_bytes, row_bytes, cores, True))
        cycles, frees = _merge_n_pass_cycles(per_pass, width, t.col_align, dtype)
    elif t.mode == "normal":
        passes = t.rows_per_core
        copy_in = float(vp.copy_seconds(profile, row_bytes, row_bytes, row_bytes, cores))
        copy_out = float(vp.copy_seconds(profile, row_bytes, row_bytes, row_bytes, cores, True))
        cycles, frees = _normal_row_cycles(width, dtype)
    else:
        passes = t.rows_per_core
        pieces = math.ceil(width / t.piece)
        one = float(vp.copy_seconds(profile, t.piece * b, t.piece * b, t.piece * b, cores))
        copy_in = 2 * pieces * one  # read for the sum, then again to scale
        copy_out = pieces * float(vp.copy_seconds(profile, t.piece * b, t.piece * b,
                                                  t.piece * b, cores, True))
        cycles = _split_d_row_cycles(width, t.piece, dtype)
        frees = cycles
    compute = cycles / clock
    # one buffer a queue: the next copy-in starts when this pass frees its input, the
    # next pass's cast out waits for this pass's copy-out
    period = max(compute, frees / clock + copy_in, copy_out)
    if t.mode == "split_d":
        period = copy_in + compute + copy_out
    gamma = float(vp.copy_seconds(profile, row_bytes, row_bytes, row_bytes, cores))
    bursts = vp.pad_bursts(2 * t.rows_per_core, row_bytes)  # the core's rows, in and out
    if t.mode == "split_d":  # each row's pieces in, computed and out before the next
        rows_s = passes * period
    else:  # the first pass's copy-in, a period a pass to the last, whose compute and
        # copy-out close the call (no next copy-in waits on them)
        rows_s = copy_in + (passes - 1) * period + compute + copy_out
    core_s = gamma + rows_s + vp.pad_bursts_s(profile, bursts)
    read = float(rows * row_bytes + row_bytes)
    chip = float(vp.chip_floor_s(profile, read, float(rows * row_bytes)))
    return RmsNormCost(KERNEL_LAUNCH_S + max(core_s, chip), copy_in, compute, copy_out,
                       passes, chip, t)


def rms_norm_seconds(profile: SocProfile, rows: int, width: int, dtype: str) -> float:
    return rms_norm_cost(profile, rows, width, dtype).total_s
