"""One vector core's pipes as CANN's vector kernels drive them: instructions, the scalar
round trip and DataCopy runs between GM and UB.

CANN's vector kernels (ops-nn's RmsNorm and SwiGlu) issue each vector instruction
over a whole UB buffer and put ``PipeBarrier<PIPE_V>`` after nearly every one, so
an instruction costs its repeats at the unit's measured rate plus a fixed cost to
issue it and wait for it; a reduction's sum goes to the scalar unit and back. A
``DataCopy``/``DataCopyPad`` of ``blockCount`` rows moves one contiguous run a row,
and every run pays its own request, so rows much shorter than a tile are bound by
their runs, not their bytes.

Where each number comes from (one, :data:`PAD_BURST_CYCLES`, was read from vector kernels'
timings, cann-bench's seen rows, which give no band):

* instruction rates: msKPP's single-core tables (``hardware.measured_core.VECTOR_910B1``):
  two-operand Add/Mul/Exp half the rate of one-operand Adds/Muls, Div a quarter;
* a GM->UB or UB->GM DataCopy's start-up and per-core rate: a straight line through
  msKPP's single-core tables (about 0.08 us and 82 GB/s in, 0.07 us and 131 GB/s
  out), a read never more than the core's share of HBM while every launched core
  streams; the call as a whole never beats its HBM floor (:func:`chip_floor_s`);
* a write lands in L2: the L2 is write-back and starts clean (these kernels are timed
  with L2 cleared before each call), so a core's UB->GM copy streams at its share of
  L2's write rate (:mod:`.shared_memory`) and the call pays HBM only for the dirty
  lines its own traffic evicts
  once reads and writes together outgrow the usable L2 (:func:`written_back_bytes`):
  CANN's RmsNorm of 4096 x 8192 fp32 moves 268 MB in 146 us (1.84 TB/s, past the
  HBM's 1.6), which only an output held in L2 allows;
* a run's request and each 512 B line it touches: the GM streaming costs of
  :mod:`.transfer`, fitted to published GEMM timings (a line from HBM once, from L2
  when neighbouring runs share it); the partial-line and misaligned-start costs of that
  fit are the cube's nd2nz row transfers and are not charged here: a DataCopy into UB
  moves 32 B blocks, however its runs sit in a line;
* a row that is not a whole number of 32 B blocks is copied by ``DataCopyPad`` (CANN's
  RmsNorm, AddRmsNorm and SwiGlu switch to it exactly then, each row one burst that
  lands on a fresh 32 B block of UB). A burst shorter than a block is one masked
  block: it pays its request like any run, on its own core, so rows of a few bytes
  cost their busiest core's runs (how the kernel deals rows over cores), not the
  chip's total. A burst longer than a block that ends inside one is a body of whole
  blocks and a masked tail (inferred: no public figure splits the two); it costs its
  core :data:`PAD_BURST_CYCLES` more, in and out alike and one after the other
  (:func:`pad_bursts_s`). Read from cann-bench's rows that are not 32 B aligned and
  longer than a block (12 rows, 134 B to 8 KB, RmsNorm's MergeN and Normal passes and
  SwiGlu's tiles): their published time less the model's without it, over the busiest
  core's bursts, has median 50 cycles (spread 16-42 ns), and only when in and out add
  does it come out alike for RmsNorm (a row in, then out) and SwiGlu (two halves in
  on one engine while the output leaves on the other). cann-bench's three calls of 2-
  and 14-element rows (1000003 x 2 RmsNorm and SwiGlu, 133221 x 14 SwiGlu, bursts of 2
  to 14 B) read 9-17x slower than this: the figures its later metadata replaced by
  caps, and unseen timings of such rows are 4-23x faster than a chip-wide rate set
  from them; they are reported, not fitted;
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

from aoe_optuna.aicore.pipes import shared_memory, transfer
from aoe_optuna.hardware import measured_core
from aoe_optuna.hardware.profile import SocProfile

PAD_BURST_CYCLES = 50.0  # a DataCopyPad burst on one core (cann-bench's unaligned rows)
BLOCK_BYTES = 32
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
    requests and lines or the bytes at the core's rate, whichever is longer (a
    ``DataCopyPad``'s bursts add :func:`pad_bursts_s`)."""
    nbytes = np.asarray(nbytes, dtype=float)
    run = np.maximum(np.asarray(run_bytes, dtype=float), 1.0)
    stride = np.maximum(np.asarray(stride_bytes, dtype=float), run)
    mover = ub_copy(write)
    chip = shared_memory.l2_write_bytes_per_s(profile) if write else profile.hbm_bandwidth()
    peak = np.minimum(mover.bytes_per_s, chip / np.maximum(np.asarray(cores, dtype=float), 1.0))
    costs = transfer.StreamCosts(
        transfer.STREAM_RUN_L2_S, transfer.STREAM_RUN_HBM_S, transfer.STREAM_LINE_L2_S,
        transfer.STREAM_LINE_HBM_S, 0.0, 0.0, peak)
    runs = nbytes / run
    visits = runs * transfer.lines_per_run(run, np.round(stride).astype(np.int64))
    distinct = np.ceil(runs * stride / LINE_BYTES)
    # a read's line comes from HBM once, from L2 when a neighbouring run fetched it; a
    # written line is allocated in L2 (write-back) and fetches nothing
    miss = 0.0 if write else np.clip(distinct / np.maximum(visits, 1.0), 0.0, 1.0)
    streamed = costs.seconds(nbytes, run, np.round(stride).astype(np.int64), miss)
    return mover.startup_s + streamed


def pad_bursts(runs: float, run_bytes: float) -> float:
    """How many of ``runs`` runs of ``run_bytes`` are ``DataCopyPad`` bursts with a body and
    a masked tail: all of them when a run is longer than a 32 B block and not a whole
    number of blocks (a shorter run is one masked block and pays only its request)."""
    return runs if run_bytes > BLOCK_BYTES and run_bytes % BLOCK_BYTES else 0.0


def pad_bursts_s(profile: SocProfile, bursts: float) -> float:
    """Seconds one core spends on ``bursts`` ``DataCopyPad`` bursts, in and out together:
    they pass one at a time whichever copy engine issues them, so they add to the
    core's time rather than hide under its pipeline."""
    return bursts * PAD_BURST_CYCLES / profile.clock_hz


def written_back_bytes(profile: SocProfile, read_bytes: np.ndarray | float,
                       write_bytes: np.ndarray | float) -> np.ndarray:
    """Output bytes written back to HBM while the call runs: none while its reads and
    writes fit the usable L2 (it starts clean and keeps the output), beyond that the
    dirty share of what the stream evicts (least recently used lines go first, dirty in
    the output's share of the bytes)."""
    moved = np.asarray(read_bytes, dtype=float) + write_bytes
    over = np.maximum(moved - profile.l2_bytes * transfer.L2_USABLE_FRACTION, 0.0)
    return over * write_bytes / np.maximum(moved, 1.0)


def chip_floor_s(profile: SocProfile, read_bytes: np.ndarray | float,
                 write_bytes: np.ndarray | float) -> np.ndarray:
    """The call's chip-wide floor: its reads from HBM (the L2 starts clean) and the
    output its traffic evicts (:func:`written_back_bytes`) at HBM bandwidth, and its
    writes at L2's write rate."""
    hbm = read_bytes + written_back_bytes(profile, read_bytes, write_bytes)
    return np.maximum(
        hbm / profile.hbm_bandwidth(),
        np.asarray(write_bytes, dtype=float) / shared_memory.l2_write_bytes_per_s(profile))
