"""How CANN's fused infer attention (FIA) deals an MLA decode call's blocks to cube cores.

The host tiling (hicann/ops-transformer ``attention/common/op_host/arch32/
fia_tiling_nonquant_mla.cpp`` ``Split``, and ``attention/common/op_host/
split_core.h`` ``SplitCore``) cuts every (sequence, KV head) into blocks of
``mBaseSize`` (256) query rows by ``sInnerSize`` (512) keys and deals them,
sequence by sequence and key block by key block, to the cube cores:

* each block has a cost, ``6 x ceil(rows / 16) + 10 x ceil(keys / 64)``
  (``CalBasicCost``), or 10 for every block when there are no more blocks than
  cores;
* for each core count from ``round(sqrt(blocks))`` to the cores
  (``SplitCore``), cores take, in order, whole sequences, then single blocks,
  while the core stays within its share of what is left (the unassigned cost
  over the cores left) plus half the next piece (``GetBlockNumOnCore``,
  ``AssignByBatch`` / ``AssignByBlock``); the core count with the smallest
  largest load wins;
* a sequence whose blocks land on several cores is a flash-decoding head: its
  partial outputs are combined after the main pass (``RecordFDInfo``).

Decode has one query token, so a sequence's rows are its Q heads over the one
latent KV head: one row block per sequence (heads <= 256). This module ports
that dealing for sequences of equal length; no timing is involved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

M_BASE = 256  # fia_tiling_nonquant_mla.h mBaseSize_
S2_BASE = 512  # fia_tiling_nonquant_mla.cpp CalcInnerSize sInnerSize_
UNIFORM_COST = 10  # CalSplitBatchInfo: every block when blocks <= cores


@dataclass(frozen=True)
class Dealing:
    """Which key blocks each used core runs, and the flash-decoding heads."""

    cores: tuple[tuple[tuple[int, int], ...], ...]  # per core: (sequence, keys) per block
    fd_heads: int  # sequences split over several cores
    max_split: int  # most cores one sequence is split over


def block_cost(rows: int, keys: int) -> int:
    """``CalBasicCost``: the host's estimate of one block's work."""
    return 6 * math.ceil(rows / 16) + 10 * math.ceil(keys / 64)


def _loads(seq_costs: list[list[int]], cores: int) -> tuple[list[int], int]:
    """``GetBlockNumOnCore`` for one core count: blocks per core and the largest load."""
    total = sum(map(sum, seq_costs))
    counts: list[int] = []
    worst = 0
    b, s2 = 0, 0  # next sequence, next block in it
    left_cost, left_blocks = sum(seq_costs[0]), len(seq_costs[0])
    unassigned = total
    last = len(seq_costs) - 1
    complete = False
    while unassigned > 0 and len(counts) < cores:
        limit = unassigned // (cores - len(counts))
        load, taken = 0, 0
        while not complete and limit + seq_costs[b][-1] // 2 >= load + left_cost:
            load, taken = load + left_cost, taken + left_blocks
            if b >= last:
                complete = True
                break
            b, s2 = b + 1, 0
            left_cost, left_blocks = sum(seq_costs[b]), len(seq_costs[b])
        if not complete:
            cost = seq_costs[b][s2]
            while limit + cost // 2 >= load + cost or taken == 0:
                load, taken = load + cost, taken + 1
                left_cost, left_blocks, s2 = left_cost - cost, left_blocks - 1, s2 + 1
                if s2 >= len(seq_costs[b]):
                    break
                cost = seq_costs[b][s2]
        counts.append(taken)
        worst = max(worst, load)
        unassigned = max(unassigned - load, 0)
    return counts, worst


def deal(batch: int, heads: int, context: int, cores: int) -> Dealing:
    """The host's dealing of ``batch`` sequences of ``context`` keys and ``heads`` Q heads."""
    if min(batch, heads, context, cores) < 1:
        raise ValueError(f"FIA split: every size must be at least 1, got "
                         f"batch {batch}, heads {heads}, context {context}, cores {cores}")
    if heads > M_BASE:
        raise ValueError(f"FIA split: at most {M_BASE} Q heads per KV head, got {heads}")
    full, tail = divmod(context, S2_BASE)
    keys = [S2_BASE] * full + ([tail] if tail else [])
    uniform = batch * len(keys) <= cores
    cost = [UNIFORM_COST if uniform else block_cost(heads, k) for k in keys]
    seq_costs = [list(cost) for _ in range(batch)]
    blocks = batch * len(keys)
    top = min(cores, blocks)
    best: tuple[list[int], int] | None = None
    for n in range(min(int(math.sqrt(blocks + 0.25) + 0.5), top), top + 1):
        counts, worst = _loads(seq_costs, n)
        if best is None or worst < best[1]:
            best = (counts, worst)
    assert best is not None
    flat = [(b, k) for b in range(batch) for k in keys]
    out, start = [], 0
    for n in best[0]:
        out.append(tuple(flat[start:start + n]))
        start += n
    spans: dict[int, int] = {}
    for core in out:
        for seq in {b for b, _ in core}:
            spans[seq] = spans.get(seq, 0) + 1
    split = [n for n in spans.values() if n > 1]
    return Dealing(tuple(out), len(split), max(split, default=1))
