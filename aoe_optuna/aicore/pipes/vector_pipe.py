"""One vector core's pipes as CANN's vector kernels drive them: instructions, the scalar
round trip and DataCopy runs between GM and UB.

CANN's vector kernels (ops-nn's RmsNorm and SwiGlu) issue each vector instruction
over a whole UB buffer and put ``PipeBarrier<PIPE_V>`` after nearly every one, so
an instruction costs its repeats at the unit's measured rate plus a fixed cost to
issue it and wait for it; a reduction's sum goes to the scalar unit and back. A
``DataCopy``/``DataCopyPad`` of ``blockCount`` rows moves one contiguous run a row,
and every run pays its own request, so rows much shorter than a tile are bound by
their runs, not their bytes.

Where each number comes from (none was set from a vector kernel's timing):

* instruction rates: msKPP's single-core tables (``hardware.measured_core.VECTOR_910B1``):
  two-operand Add/Mul/Exp half the rate of one-operand Adds/Muls, Div a quarter;
* a GM->UB or UB->GM DataCopy's start-up and per-core rate: a straight line through
  msKPP's single-core tables (about 0.08 us and 82 GB/s in, 0.07 us and 131 GB/s
  out), never more than the core's share of HBM while every launched core streams;
  the call as a whole never beats its HBM floor (:func:`chip_floor_s`);
* a run's request and each 512 B line it touches: the GM streaming costs of
  :mod:`.transfer`, fitted to published GEMM timings (a line from HBM once, from L2
  when neighbouring runs share it);
* the issue cost of an instruction and the scalar round trip of a norm row's rstd:
  assumed orders of magnitude (30 and 100 cycles), the values the project's kernel
  model has used since its norms paid a cost per row.

Both CANN's kernels (:mod:`aoe_optuna.aicore.cann`: RmsNorm, AddRmsNorm, SwiGlu) and
the project's own (:mod:`aoe_optuna.aicore.vector.vector_ops`) are priced here: one
vector unit and one copy line, so the two differ only by what their structure does.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from aoe_optuna.aicore.pipes import transfer
from aoe_optuna.hardware import measured_core
from aoe_optuna.hardware.profile import SocProfile

ISSUE_CYCLES = 30.0  # assumed: scalar set-up and the PipeBarrier wait, per instruction
SCALAR_ROUND_TRIP_CYCLES = 100.0  # assumed: V->S flag, sqrt and divide, S->V flag
FP32_PER_REPEAT = 64  # 256 B of fp32: one repeat
LINE_BYTES = transfer.LINE_BYTES


def elements_per_cycle(op: str) -> float:
    """Elements one instruction of ``op`` moves a cycle at saturation (msKPP 910B1)."""
    elements, _, cycles = measured_core.VECTOR_910B1[op]
    return elements / cycles


def cycles_per_repeat(op: str) -> float:
    """Cycles of one repeat of ``op`` at saturation (msKPP 910B1)."""
    _, repeats, cycles = measured_core.VECTOR_910B1[op]
    return cycles / repeats


def instruction_cycles(op: str, elements: np.ndarray | float) -> np.ndarray:
    """Cycles of one ``op`` instruction over ``elements`` (a whole buffer), issue included."""
    return np.asarray(elements, dtype=float) / elements_per_cycle(op) + ISSUE_CYCLES


def repeat_cycles(op: str, repeats: np.ndarray | float) -> np.ndarray:
    """Cycles of one ``op`` instruction of ``repeats`` masked repeats (a repeat costs the
    same however few of its lanes the mask keeps), issue included."""
    return np.asarray(repeats, dtype=float) * cycles_per_repeat(op) + ISSUE_CYCLES


def cast_in(dtype: str) -> str | None:
    """The cast a kernel computing in fp32 applies to an input of ``dtype`` (None: fp32)."""
    return None if dtype == "fp32" else f"cast_{dtype}_fp32"


def cast_out(dtype: str) -> str | None:
    """The cast back to ``dtype`` of an fp32 result (None: fp32)."""
    return None if dtype == "fp32" else f"cast_fp32_{dtype}"


@cache
def ub_copy(write: bool) -> transfer.MoverFit:
    """GM->UB (or UB->GM) DataCopy of one core: start-up and bytes/s, a straight line
    through msKPP's table (KiB moved, GB/s)."""
    rows = np.array(measured_core.UB_TO_GM_910B1 if write else measured_core.GM_TO_UB_910B1)
    seconds = rows[:, 0] * 1024 / (rows[:, 1] * 1e9)
    slope, intercept = np.polyfit(rows[:, 0] * 1024, seconds, 1)
    return transfer.MoverFit(startup_s=max(float(intercept), 0.0), bytes_per_s=1.0 / float(slope))


def copy_seconds(profile: SocProfile, nbytes: np.ndarray | float, run_bytes: np.ndarray | float,
                 stride_bytes: np.ndarray | float, cores: np.ndarray | float,
                 write: bool = False,
                 ) -> np.ndarray:
    """Seconds of one DataCopy of ``nbytes`` in runs of ``run_bytes`` ``stride_bytes``
    apart in GM, while ``cores`` cores stream alike: the start-up, then the runs'
    requests and lines or the bytes at the core's rate, whichever is longer."""
    nbytes = np.asarray(nbytes, dtype=float)
    run = np.maximum(np.asarray(run_bytes, dtype=float), 1.0)
    stride = np.maximum(np.asarray(stride_bytes, dtype=float), run)
    mover = ub_copy(write)
    peak = np.minimum(mover.bytes_per_s,
                      profile.hbm_bandwidth() / np.maximum(np.asarray(cores, dtype=float), 1.0))
    costs = transfer.StreamCosts(
        transfer.STREAM_RUN_L2_S, transfer.STREAM_RUN_HBM_S, transfer.STREAM_LINE_L2_S,
        transfer.STREAM_LINE_HBM_S, transfer.STREAM_PARTIAL_S, transfer.STREAM_MISALIGNED_S,
        peak)
    runs = nbytes / run
    visits = runs * transfer.lines_per_run(run, np.round(stride).astype(np.int64))
    distinct = np.ceil(runs * stride / LINE_BYTES)
    miss = np.clip(distinct / np.maximum(visits, 1.0), 0.0, 1.0)
    streamed = costs.seconds(nbytes, run, np.round(stride).astype(np.int64), miss)
    return mover.startup_s + streamed


def chip_floor_s(profile: SocProfile, read_bytes: float, write_bytes: float) -> float:
    """The call's HBM time: every byte in and out at HBM bandwidth (the L2 starts cold;
    a write-back L2 may keep part of the output, which this floor does not credit, so
    the floor is the kernel's roofline)."""
    return (read_bytes + write_bytes) / profile.hbm_bandwidth()
