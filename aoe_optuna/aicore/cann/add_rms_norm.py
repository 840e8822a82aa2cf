"""CANN's AddRmsNorm (the residual add and RMSNorm in one kernel) on a 910B's vector
cores: its host tiling, then its kernel's passes.

Read in hicann/ops-nn @ e5c3fa93 (``norm/add_rms_norm``):

* ``op_host/add_rms_norm_tiling.cpp`` 344-352: ``blockFactor = ceil(rows / AIV
  cores)`` consecutive rows a core; 362-407 pick the kernel: SplitD when the row
  exceeds the UB factor (12288 fp16/bf16, 10240 fp32 elements); SingleN when no
  core has more than one row; MergeN up to 2000 padded elements, ``rowFactor =
  (UB - 1 KiB) // (18 numColAlign + 260)`` rows a pass (24 in fp32); MultiN for
  fp16 rows already 32 B aligned, ``(UB - 1 KiB - 256 - 2 numColAlign) // (16
  numColAlign + 64)`` rows a pass; Normal otherwise.
* ``op_kernel/add_rms_norm_single_n.h``: the one row in UB: both inputs copied in,
  the add, the sum copied out while gamma comes in, cast, square, scale by 1/n,
  ``ReduceSumCustom`` (a Duplicate, one Add of a repeat per 64 columns, a
  WholeReduceSum), rstd on the vector unit, the scalar's read of it, scale, cast,
  multiply by gamma, copy out.
* ``op_kernel/add_rms_norm_multi_n.h`` (MultiN): every instruction spans the pass
  but the sum and the rstd scaling go row by row (a ReduceSumCustom and a Mul a
  row, 190-191 and 225-236); the two buffers of the input queue hold a pass's two
  inputs and those of the output queue its sum and result; the inputs are freed
  once added (``ComputeX``) and no step waits on the scalar, so the next pass's
  copy-in runs under this pass's compute.
* ``op_kernel/add_rms_norm.h`` (Normal): a row a pass, single buffered
  (``add_rms_norm_base.h`` 24), the scalar waiting on each row's rstd.
* ``op_kernel/add_rms_norm_merge_n.h`` (MergeN): as RmsNorm's MergeN, with the add
  and the sum's copy-out first.

The ``isPerformance`` variants and the split-D kernel's exact instruction mix are
not followed; SplitD is priced as two passes over the row's pieces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aoe_optuna.aicore.cann.rms_norm import RmsNormTiling
from aoe_optuna.aicore.pipes import vector_pipe as vp
from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile

MERGE_N_MAX = 2000  # SMALL_REDUCE_NUM
UB_FACTOR = {"fp16": 12288, "bf16": 12288, "fp32": 10240}
SPLIT_FACTOR = {"fp16": 12096, "bf16": 12096, "fp32": 9696}  # UB_FACTOR_*_CUTD
UB_RESERVED = 1024  # UB_USED
MERGE_N_WEIGHT = {"fp16": 18, "bf16": 18, "fp32": 24}  # OTHER_WEIGHT / FP32_WEIGHT
MERGE_N_PER_ROW = 260  # DIV_FACTOR
MULTI_N_RESERVED = 256  # USE_SIZE


def tiling(profile: SocProfile, rows: int, width: int, dtype: str) -> RmsNormTiling:
    """CANN's AddRmsNorm tiling on a 910B (``DetermineModeParameters``)."""
    align = 32 // DTYPE_BYTES[dtype]
    col_align = math.ceil(width / align) * align
    block = math.ceil(rows / profile.vector_cores)
    cores = math.ceil(rows / block)
    ub = profile.ub_bytes - UB_RESERVED
    if width > UB_FACTOR[dtype]:
        pieces = math.ceil(width / SPLIT_FACTOR[dtype])
        piece = math.ceil(width / (pieces * align)) * align
        return RmsNormTiling("split_d", cores, block, col_align, 1, piece)
    if block == 1:
        return RmsNormTiling("single_n", cores, block, col_align, 1, col_align)
    if col_align <= MERGE_N_MAX:
        per_pass = ub // (col_align * MERGE_N_WEIGHT[dtype] + MERGE_N_PER_ROW)
        return RmsNormTiling("merge_n", cores, block, col_align, max(1, per_pass), col_align)
    if dtype == "fp16" and width == col_align:
        per_pass = (ub - MULTI_N_RESERVED - 2 * col_align) // (col_align * 16 + 64)
        if per_pass > 0:
            return RmsNormTiling("multi_n", cores, block, col_align, per_pass, col_align)
    return RmsNormTiling("normal", cores, block, col_align, 1, col_align)


@dataclass(frozen=True)
class AddRmsNormCost:
    """Seconds of one call (busiest core) and one pass's parts."""

    total_s: float
    copy_in_s: float  # both inputs
    compute_s: float
    copy_out_s: float  # the sum and the result
    passes: int
    chip_s: float
    tiling: RmsNormTiling


def _c(op: str | None, elements: float) -> float:
    return float(vp.instruction_cycles(op, elements)) if op else 0.0


def _add_cycles(dtype: str, elements: float) -> float:
    """The residual add: in fp16 (then a cast up), in fp32 for bf16 (two casts up, one
    rounding the sum back to bf16), or in fp32 (the kernels' add.h, multi_n.h)."""
    if dtype == "fp16":
        return _c("add_fp16", elements)
    if dtype == "bf16":
        return 2 * _c("cast_bf16_fp32", elements) + _c("add", elements) + _c(
            "cast_fp32_bf16", elements)
    return _c("add", elements)


def _row_sum_cycles(width: int) -> float:
    """``ReduceSumCustom`` (rms_norm_base.h ``ReduceSumFP32``): a Duplicate of one
    repeat, one Add of a repeat per 64 columns (and the tail), a WholeReduceSum."""
    chunks = width // vp.FP32_PER_REPEAT
    tail = 1 if width % vp.FP32_PER_REPEAT else 0
    return (float(vp.repeat_cycles("dup", 1)) + float(vp.repeat_cycles("add", chunks))
            + tail * float(vp.repeat_cycles("add", 1)) + float(vp.repeat_cycles("reduce", 1)))


def _rstd_cycles(elements: float) -> float:
    """rstd on the vector unit: Adds, Sqrt (at Div's rate), Duplicate, Div."""
    return _c("adds", elements) + 2 * _c("div", elements) + _c("dup", elements)


def _scale_cycles(dtype: str, elements: float) -> float:
    """rstd and gamma applied, the result cast out: fp16 multiplies by gamma after the
    cast, bf16 rounds to bf16 and back first (add_rms_norm.h 235-240)."""
    if dtype == "fp16":
        return _c("muls", elements) + _c("cast_fp32_fp16", elements) + _c("mul_fp16", elements)
    if dtype == "bf16":
        return (_c("muls", elements) + 2 * _c("cast_fp32_bf16", elements)
                + 2 * _c("cast_bf16_fp32", elements) + _c("mul", elements))
    return _c("muls", elements) + _c("mul", elements)


def _row_cycles(dtype: str, width: int) -> tuple[float, float]:
    """One row as SingleN and Normal run it: all cycles, and those up to the scalar's
    read of rstd (after which the next row's copies are issued)."""
    cast_up = "cast_fp16_fp32" if dtype == "fp16" else None  # bf16 already has fp32
    summed = (_add_cycles(dtype, width) + _c(cast_up, width) + _c("mul", width)
              + _c("muls", width) + _row_sum_cycles(width) + _rstd_cycles(1)
              + vp.SCALAR_ROUND_TRIP_CYCLES)
    return summed + _scale_cycles(dtype, width), summed


def _multi_pass_cycles(mode: str, dtype: str, rows: int, width: int, col_align: int) -> float:
    """One MultiN or MergeN pass: the add, cast, square and 1/n over the pass; the sums
    (MultiN: a ReduceSumCustom a row; MergeN: an Add per 64 columns with a repeat a row
    and a WholeReduceSum repeat a row); rstd over the rows; rstd applied (MultiN: a Mul
    a row; MergeN: a broadcast and one Mul over the pass); gamma and the cast out."""
    elements = rows * col_align
    cast_up = "cast_fp16_fp32" if dtype == "fp16" else ("cast_bf16_fp32" if dtype == "bf16"
                                                        else None)
    chunks = math.ceil(width / vp.FP32_PER_REPEAT)
    if mode == "multi_n":
        sums = rows * _row_sum_cycles(width)
        apply = rows * float(vp.repeat_cycles("mul", chunks))
    else:
        sums = (_c("dup", rows * vp.FP32_PER_REPEAT) + chunks * float(vp.repeat_cycles("add", rows))
                + float(vp.repeat_cycles("reduce", rows)))
        apply = _c("dup", elements) + _c("mul", elements)
    gamma_and_cast = _scale_cycles(dtype, elements) - _c("muls", elements)
    return (_add_cycles(dtype, elements) + _c(cast_up, elements) + _c("mul", elements)
            + _c("muls", elements) + sums + _rstd_cycles(rows * 8) + apply + gamma_and_cast)


def add_rms_norm_cost(profile: SocProfile, rows: int, width: int, dtype: str) -> AddRmsNormCost:
    """Seconds of CANN's AddRmsNorm over two ``rows`` x ``width`` inputs of ``dtype``."""
    t = tiling(profile, rows, width, dtype)
    b = DTYPE_BYTES[dtype]
    clock = profile.clock_hz
    cores = float(t.cores)
    row_bytes = width * b

    def copy(nbytes: float, write: bool = False) -> float:
        return float(vp.copy_seconds(profile, nbytes, row_bytes, row_bytes, cores, write))

    if t.mode in ("single_n", "normal"):
        passes = t.rows_per_core
        copy_in, copy_out = 2 * copy(row_bytes), 2 * copy(row_bytes, True)
        cycles, summed = _row_cycles(dtype, width)
        compute = cycles / clock
        # single buffered: the next row's copies leave after the scalar reads rstd
        period = max(compute, summed / clock + copy_in, copy_out)
        gamma = copy(row_bytes)
        core_s = gamma + copy_in + passes * period + copy_out / 2
    elif t.mode in ("multi_n", "merge_n"):
        per_pass = min(t.rows_per_pass, t.rows_per_core)
        passes = math.ceil(t.rows_per_core / per_pass)
        copy_in = 2 * copy(per_pass * row_bytes)
        copy_out = 2 * copy(per_pass * row_bytes, True)
        compute = _multi_pass_cycles(t.mode, dtype, per_pass, width, t.col_align) / clock
        # a pass frees its inputs once added and its sum once copied out, and nothing
        # waits on the scalar: the next copy-in runs under this pass's compute, the
        # copy-out under the next one's
        period = max(compute, copy_in, copy_out)
        core_s = copy(row_bytes) + copy_in + passes * period + copy_out
    else:  # split_d: the pieces read, added and summed, then read again and scaled
        passes = t.rows_per_core
        pieces = math.ceil(width / t.piece)
        one = float(vp.copy_seconds(profile, t.piece * b, t.piece * b, t.piece * b, cores))
        one_out = float(vp.copy_seconds(profile, t.piece * b, t.piece * b, t.piece * b, cores,
                                        True))
        copy_in = pieces * (2 * one + one)  # both inputs, then the sum again
        copy_out = pieces * 2 * one_out
        cycles = pieces * (_row_cycles(dtype, t.piece)[0]) + vp.SCALAR_ROUND_TRIP_CYCLES
        compute = cycles / clock
        core_s = passes * (copy_in + compute + copy_out)
    if t.mode != "split_d":  # two rows in, two out, each a DataCopyPad burst when unaligned
        core_s += vp.pad_bursts_s(profile, vp.pad_bursts(4 * t.rows_per_core, row_bytes))
    chip = float(vp.chip_floor_s(profile, float(2 * rows * row_bytes + row_bytes),
                                 float(2 * rows * row_bytes)))
    return AddRmsNormCost(KERNEL_LAUNCH_S + max(core_s, chip), copy_in, compute, copy_out,
                          passes, chip, t)


def add_rms_norm_seconds(profile: SocProfile, rows: int, width: int, dtype: str) -> float:
    return add_rms_norm_cost(profile, rows, width, dtype).total_s
