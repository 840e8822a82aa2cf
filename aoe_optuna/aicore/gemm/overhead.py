"""Scalar and issue overhead, and how compile options scale it (coarse by design).

The scalar unit issues every instruction of every pipe, runs the K loop and
computes addresses; the pipes hand data over through set/wait flags whose
latency leaves a short bubble per K step. None of this is measured in our
references: the cycle counts below are assumed orders of magnitude, chosen
so that compile options move a kernel by a few percent (never more than the
tile shape does), and documented as such in docs/SIMULATOR.md.

* ``opt_level`` scales all scalar work (O0 keeps loop variables in memory);
* ``schedule`` trades the per-step bubble against per-block prologue code
  (``throughput`` software-pipelines the loop: small bubbles, long prologue;
  ``latency`` the reverse), so it interacts with the K-loop length;
* ``unroll_factor`` divides the loop cost by the unroll (up to the trip
  count; 0 = the compiler's choice, taken as 2) at the price of code fetched
  per block and a remainder epilogue when the trip count is not a multiple;
  the loop's counter and branch sit between a flag wait and the next issue,
  so they are exposed like the bubble. O3 grows the unrolled body further
  (inlining), so it pays more code fetch per copy: O3 and a big unroll clash.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aoe_optuna.space.params import SCHEDULES

ISSUE_CYCLES = 2.0  # assumed: scalar cycles to issue one pipe instruction
FLAG_INSTRUCTIONS_PER_STEP = 4  # set/wait flag pairs MTE1<->Cube per K step
LOOP_CYCLES = 16.0  # assumed: index update, address arithmetic and branch per iteration
SYNC_BUBBLE_CYCLES = 12.0  # assumed: exposed flag latency per pipe hand-over
BLOCK_SETUP_CYCLES = 400.0  # assumed: offsets, FixPipe registers, flag init per block
UNROLL_CODE_CYCLES = 6.0  # assumed: instruction fetch per unrolled copy per block
REMAINDER_CYCLES = 2 * LOOP_CYCLES  # epilogue when the unroll does not divide the trip count
COMPILER_DEFAULT_UNROLL = 2

OPT_LEVEL_FACTOR = np.array([3.0, 1.5, 1.0, 0.92])  # O0..O3, multiplies all scalar work
CODE_GROWTH = np.array([1.0, 1.0, 1.0, 2.0])  # O0..O3, code fetched per unrolled copy

# schedule -> (bubble factor, issue factor, block setup factor), in SCHEDULES order.
SCHEDULE_FACTORS = {
    "default": (1.0, 1.0, 1.0),
    "balanced": (0.9, 1.0, 1.05),
    "throughput": (0.75, 0.95, 1.25),
    "latency": (1.15, 1.05, 0.75),
}
_SCHED = np.array([SCHEDULE_FACTORS[s] for s in SCHEDULES])

# pipe hand-overs per K step that leave a bubble: serial pipes wait on every one.
HANDOVERS = np.array([4.0, 2.0, 1.0])  # pipeline 0, 1, 2


@dataclass(frozen=True)
class Overheads:
    """Scalar costs in cycles, per config."""

    issue_per_step: np.ndarray  # scalar pipe busy time per K step (a pipe of its own)
    bubble_per_step: np.ndarray  # exposed, added to every K step
    per_block: np.ndarray  # setup + code fetch + remainder, once per block


def scalar_overheads(
    opt_level: np.ndarray, schedule: np.ndarray, unroll: np.ndarray, pipeline: np.ndarray,
    instructions_per_step: np.ndarray, k_steps: np.ndarray,
) -> Overheads:
    """Scalar/issue overhead of each config (codes as in :mod:`aoe_optuna.space.params`)."""
    level = np.asarray(opt_level, dtype=np.int64)
    opt = OPT_LEVEL_FACTOR[level]
    sched = _SCHED[np.asarray(schedule, dtype=np.int64)]
    u = np.where(unroll <= 0, COMPILER_DEFAULT_UNROLL, unroll).astype(float)
    u_eff = np.minimum(u, k_steps)
    loop = LOOP_CYCLES / u_eff
    issue = (instructions_per_step + FLAG_INSTRUCTIONS_PER_STEP) * ISSUE_CYCLES * sched[:, 1]
    issue_per_step = opt * issue
    bubble = SYNC_BUBBLE_CYCLES * HANDOVERS[np.asarray(pipeline, dtype=np.int64)] * sched[:, 0]
    remainder = np.where(np.mod(k_steps, u_eff) != 0, REMAINDER_CYCLES, 0.0)
    code = UNROLL_CODE_CYCLES * u_eff * CODE_GROWTH[level]
    per_block = opt * (BLOCK_SETUP_CYCLES * sched[:, 2] + code + remainder)
    return Overheads(issue_per_step=issue_per_step, bubble_per_step=opt * (bubble + loop),
                     per_block=per_block)
