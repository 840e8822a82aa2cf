"""How the pipes of one core overlap, per L1 stage of a block.

Per K step the core runs MTE1 (L1->L0A/L0B), the cube (MMAD) and the scalar
unit (issue); per L1 stage MTE2 loads ``steps`` K steps of A and B (latency
``lat`` plus ``load`` cycles of transfer). With ``pipeline``:

* 0, none: every pipe waits for the previous one,
  ``period = lat + load + steps * (mte1 + mmad)``;
* 1, single buffer: MTE1 and the cube still alternate on one L0 buffer, but
  MTE2 streams the stage while the cube works;
* 2, double buffer: L0A/L0B ping-pong lets MTE1 run one step ahead of the
  cube, ``steps * max(mte1, mmad)``; the pipe fills once per block
  (:func:`block_fill_cycles`), or once per stage without L1 prefetch, when
  MTE1 must wait for each stage's data.

and ``l1_prefetch``:

* 0 (one L1 stage): compute of a stage starts once its first K step has
  arrived, and the next stage's load waits for the buffer to be free:
  ``period = lat + load/steps + max(load * (steps-1)/steps, compute)``;
* 1 (two L1 stages, ping-pong): the next stage loads during this one; each
  buffer cycles through load and compute, so
  ``period = max(compute, load, (lat + load + compute) / 2)``.
"""

from __future__ import annotations

import numpy as np


def stage_compute_cycles(
    pipeline: np.ndarray, steps: np.ndarray, mte1: np.ndarray, mmad: np.ndarray,
    issue: np.ndarray, bubble: np.ndarray,
) -> np.ndarray:
    """Cycles of one L1 stage's K steps on MTE1 + cube (+ scalar issue, + bubbles)."""
    serial = steps * (mte1 + mmad)
    overlapped = steps * np.maximum(mte1, mmad)
    compute = np.where(pipeline >= 2, overlapped, serial)
    return np.maximum(compute, steps * issue) + steps * bubble


def stage_period_cycles(
    pipeline: np.ndarray, prefetch: np.ndarray, steps: np.ndarray, lat: np.ndarray,
    load: np.ndarray, compute: np.ndarray,
) -> np.ndarray:
    """Cycles per L1 stage once the pipes are combined as the module docstring says."""
    serial = lat + load + compute
    one_buffer = lat + load / steps + np.maximum(load * (steps - 1) / steps, compute)
    two_buffers = np.maximum(np.maximum(compute, load), (lat + load + compute) / 2)
    overlapped = np.where(prefetch != 0, two_buffers, one_buffer)
    return np.where(pipeline == 0, serial, overlapped)


def own_queues_period_cycles(
    compute: np.ndarray, load_a: np.ndarray, load_b: np.ndarray, lat: np.ndarray,
    depth_a: np.ndarray, depth_b: np.ndarray, depth: np.ndarray,
) -> np.ndarray:
    """Cycles per L1 stage of ``depth`` K when A and B sit in L1 queues of their own,
    each double buffered ``depth_a`` / ``depth_b`` deep (CANN's library matmul through
    the Ascend C Matmul API: ``depthA1``, ``depthB1``), rather than in one joint stage.

    Each operand's buffer cycles through its own load start-up, its load and the
    compute that reads it, two buffers deep: over a stage that is ``(lat depth/d +
    load + compute) / 2``, a deeper queue paying its start-up over more K. MTE2 still
    moves both operands' bytes and the cube still computes the stage.
    """
    own_a = (lat * depth / depth_a + load_a + compute) / 2
    own_b = (lat * depth / depth_b + load_b + compute) / 2
    return np.maximum(np.maximum(compute, load_a + load_b), np.maximum(own_a, own_b))


def block_tiles_cycles(
    pipeline: np.ndarray, prefetch: np.ndarray, preload: np.ndarray, tiles: np.ndarray,
    steps: np.ndarray, lat: np.ndarray, load: np.ndarray, compute: np.ndarray,
    period: np.ndarray, fixpipe: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Cycles of a block's ``tiles`` L1 tiles and its write-back, and the load a core
    waits for once, before its first block.

    Each load is charged once. Without two L1 stages (``l1_prefetch`` 0, or
    ``pipeline`` 0) every stage period already waits for its own load, so
    nothing more shows. With two stages the first tile's first K step
    (``lat + load/steps``) is waited for, and then:

    * preload (catlass MmadAtlasA2Preload): the next block's first tile loads
      under this block's last tiles, so a core streams tiles across blocks;
      the wait shows once per core (the second value);
    * ping-pong: the next block's first load is issued only when the block
      starts, while this block's FixPipe drains into GM; the block runs
      ``tiles - 1`` stage periods, then its last tile's compute (a lone tile
      computes under the rest of its own load), and waits
      ``max(fixpipe, first load)`` for its write-back and the next block's
      first load. Once per core, ``min(fixpipe, first load)`` completes the sum
      to: the first block's load alone, the last block's write-back alone.
    """
    start = lat + load / np.maximum(steps, 1.0)
    two_stages = (prefetch != 0) & (pipeline != 0)
    rest = load * (steps - 1) / np.maximum(steps, 1.0)
    last = np.where(tiles > 1, compute, np.maximum(compute, rest))
    streamed = tiles * period + fixpipe
    pingpong = (tiles - 1) * period + last + np.maximum(fixpipe, start)
    block = np.where(two_stages & ~preload, pingpong, streamed)
    once = np.where(preload, start, np.minimum(fixpipe, start))
    return block, np.where(two_stages, once, 0.0)


def fill_cycles(
    pipeline: np.ndarray, prefetch: np.ndarray, stages: np.ndarray, mte1: np.ndarray,
    mmad: np.ndarray,
) -> np.ndarray:
    """Double buffering's pipe fill: the first MTE1 step before the cube can start.

    Once per block when the next L1 stage is already there (prefetch), once per
    stage otherwise; pipeline 0 and 1 have no overlap to fill.
    """
    per_fill = np.minimum(mte1, mmad)
    fills = np.where(prefetch != 0, 1.0, stages)
    return np.where(pipeline >= 2, fills * per_fill, 0.0)


def exposed_fixpipe_cycles(
    fixpipe: np.ndarray, mmad: np.ndarray, unit_flag: np.ndarray
) -> np.ndarray:
    """FixPipe cycles a block waits for after its last MMAD.

    Without the unit flag L0C is written back only once the cube is done with
    the block; with it (catlass ENABLE_UNIT_FLAG) FixPipe drains each L0C
    fractal as the last MMAD finishes it, so up to one MMAD's time hides.
    """
    return np.where(unit_flag, np.maximum(fixpipe - mmad, 0.0), fixpipe)
