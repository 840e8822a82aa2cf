"""One prefill flash-attention step of one unit as a 910B runs it with every core busy: the
cube's two matmuls and the vector core's online softmax, each priced at measured rates.

Read in CANN's prompt flash attention (hicann/ops-transformer@c29bc10,
``attention/prompt_flash_attention``): ``op_kernel/prompt_flash_attention_s1s2_bns1_x910.h``
and its ``_base.h``, ``op_host/prompt_flash_attention_tiling.cpp`` and the operator's design
note ``docs/PFA算子设计介绍.md``. The cube and the vector cores hand S and P to each
other through GM (a small workspace that stays in L2):

* **bmm1, S = Q K^T** (``Bmm1ComputeIterate``): the host asks the matmul API for
  base blocks of the whole ``sOuter x sInner`` block, which its L0C cannot hold, and
  falls back to ``baseM = 128, baseN = 256, baseK = 64`` (tiling.cpp, ``autoBaseMNK``).
  An fp32 128 x 256 block fills the 128 KiB L0C, so there is no second L0C buffer:
  each block's FixPipe to GM waits for its MMADs and the next block's MMADs wait for
  the FixPipe. Blocks that fit L0C twice overlap the two.
* **softmax** (``Res1VecCompute``): the vector core copies S in (fp32) chunk by chunk,
  each chunk a row slice of at most ``SOFTMAX_CHUNK_SCORES`` scores, ping-pong
  buffered, and on each runs a ``Muls`` by the scale, the mask's select on a diagonal
  block, ``SoftmaxFlashV2`` (the row max as pairwise folds down to one repeat and a
  whole-repeat reduce, the subtract, the exp, the row sum the same way, and per row
  the old max's rescale and the running sum) and the cast of P to fp16 before P goes
  out to GM; every instruction behind a ``PipeBarrier``.
* **bmm2, O += P V** (``Bmm1ResDoVecBmm2Compute``): after the softmax the vector core
  waits for the previous step's PV partial, copies it in (fp32), adds it to the running
  O, fires this step's bmm2 and rescales O by the step's ``exp(m_old - m_new)``
  (``UpdateVmul``); at the unit's end O is divided by the row sums, cast and written.

Priced with the existing physics, no constant set from an attention timing: MMADs by
the msKPP fit (:mod:`..pipes.cube`), L1->L0 and FixPipe by msKPP's movers
(:mod:`..pipes.transfer`), every vector instruction at msKPP's measured rate of its op
plus the issue cost (:mod:`..pipes.vector_pipe`), GM<->UB copies on msKPP's single-core
copy line (S, P and the partials live in L2).
"""

from __future__ import annotations

import math

import numpy as np

from aoe_optuna.aicore.pipes import cube, transfer
from aoe_optuna.aicore.pipes import vector_pipe as vp
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.prefill_attention import ACCUMULATOR_BYTES, SOFTMAX_CHUNK_SCORES

BMM1_BASE_M, BMM1_BASE_N, BASE_K = 128, 256, 64  # the matmul API's base block fallback
ROW_LANES = 8  # a per-row scalar (max, sum) takes one 32 B block of fp32 lanes
FP32_REPEAT = vp.FP32_PER_REPEAT


def _ops_cycles(ops: list[tuple[str, float]]) -> float:
    """Cycles of a list of (op, elements) instructions, each over its whole buffer."""
    return float(sum(float(vp.instruction_cycles(op, n)) for op, n in ops))


def _row_reduce(rows: int, cols: int, op: str = "add") -> list[tuple[str, float]]:
    """A row max or row sum: pairwise folds of each row down to one repeat, then one
    whole-repeat reduce (msKPP's VCADD rate stands for both reductions)."""
    out: list[tuple[str, float]] = []
    width = cols
    while width > FP32_REPEAT:
        width = math.ceil(width / 2)
        out.append((op, rows * width))
    out.append(("reduce", rows * FP32_REPEAT))
    return out


def softmax_chunk_cycles(rows: int, cols: int, dtype: str, *, masked: bool,
                         first: bool) -> float:
    """Vector cycles of one softmax chunk of ``rows`` x ``cols`` fp32 scores."""
    n = rows * cols
    ops: list[tuple[str, float]] = [("muls", n)]
    if masked:
        ops.append(("add", n))  # the select against the mask: a two-operand pass
    ops += _row_reduce(rows, cols)  # row max
    ops += [("add", n), ("exp", n)]  # x - max (broadcast), exp
    ops += _row_reduce(rows, cols)  # row sum
    r = rows * ROW_LANES
    ops.append(("add", r))  # max(old max, new max)
    if not first:  # the old max's rescale of the running sum
        ops += [("add", r), ("exp", r), ("mul", r), ("add", r)]
    cast = vp.cast_out(dtype)
    if cast is not None:
        ops.append((cast, n))
    return _ops_cycles(ops)


def _copy_s(nbytes: float, write: bool) -> float:
    """One GM<->UB DataCopy on one vector core's copy line (msKPP), from L2."""
    mover = vp.ub_copy(write)
    return mover.startup_s + nbytes / mover.bytes_per_s


def chunk_rows(tokens: int) -> int:
    """Rows per softmax chunk: as many as ``SOFTMAX_CHUNK_SCORES`` scores hold, in
    multiples of 8 where that leaves some (CANN's ``softmaxSouterStepLen``)."""
    rows = SOFTMAX_CHUNK_SCORES // max(tokens, 1)
    return max(1, rows // 8 * 8 if rows >= 8 else rows)


def softmax_step_s(profile: SocProfile, rows: int, tokens: int, v_dim: int, dtype: str,
                   *, masked: bool, first: bool) -> float:
    """Seconds of one vector core's share of a step: ``rows`` query rows over
    ``tokens`` keys (the online softmax, S in and P out chunk by chunk, ping-pong),
    then the previous step's PV partial folded into the running O and rescaled."""
    clock = profile.clock_hz
    cols = math.ceil(tokens / ROW_LANES) * ROW_LANES  # S rows padded to 32 B in UB
    per = chunk_rows(cols)
    sizes = [per] * (rows // per) + ([rows % per] if rows % per else [])
    b = 2 if dtype in ("fp16", "bf16") else 4
    stages = []
    for r in sizes:
        compute = softmax_chunk_cycles(r, cols, dtype, masked=masked, first=first) / clock
        copy_in = _copy_s(r * cols * ACCUMULATOR_BYTES + (r * cols if masked else 0), False)
        stages.append((copy_in, compute, _copy_s(r * cols * b, True)))
    # ping-pong: a chunk's copy-in runs under the previous chunk's compute and its
    # P's copy-out under the next one's; the slowest pipe sets the pace
    body = sum(max(s) for s in stages) + stages[0][0] + stages[-1][2]
    o = rows * v_dim
    update = _copy_s(o * ACCUMULATOR_BYTES, False) + _ops_cycles(
        [("add", o), ("mul", o)]) / clock
    return body + update


def final_output_s(profile: SocProfile, rows: int, v_dim: int, dtype: str) -> float:
    """The unit's end on its vector core: the last PV partial in and added, O divided by
    the row sums, cast and written out."""
    o = rows * v_dim
    ops: list[tuple[str, float]] = [("add", o), ("div", o)]
    cast = vp.cast_out(dtype)
    if cast is not None:
        ops.append((cast, o))
    b = 2 if dtype in ("fp16", "bf16") else 4
    return (_copy_s(o * ACCUMULATOR_BYTES, False) + _ops_cycles(ops) / profile.clock_hz
            + _copy_s(o * b, True))


def _mmad(profile: SocProfile, m: int, k: int, n: int) -> float:
    """Cycles of an (m x k) by (k x n) block's MMADs in ``BASE_K``-deep steps."""
    steps = math.ceil(k / BASE_K)
    per = cube.mmad_cycles(np.array(m), np.array(min(k, BASE_K)), np.array(n),
                           np.array(profile.c0["fp16"]), cube.mmad_startup_cycles(profile.soc))
    return float(per) * steps


def _fixpipe(profile: SocProfile, nbytes: float) -> float:
    return float(transfer.l0c_to_gm().cycles(np.array(nbytes), profile.clock_hz))


def _mte1(profile: SocProfile, a_bytes: float, b_bytes: float, repeats: float) -> float:
    """L1->L0A and L1->L0B of one block's operands (cycles)."""
    clock = profile.clock_hz
    return float(transfer.l1_to_l0a().cycles(np.array(a_bytes), clock, repeats)
                 + transfer.l1_to_l0b().cycles(np.array(b_bytes), clock, repeats))


def cube_step_s(profile: SocProfile, rows: int, qk_dim: int, v_dim: int, tokens: int,
                dtype_bytes: int) -> tuple[float, float]:
    """Seconds of the cube's bmm1 and bmm2 for one step of one unit (its K/V/P loads
    are the stream stage, which runs beside them)."""
    bm, bn = min(BMM1_BASE_M, _up16(rows)), min(BMM1_BASE_N, _up16(tokens))
    blocks = math.ceil(rows / bm) * math.ceil(tokens / bn)
    mmad = max(_mmad(profile, bm, qk_dim, bn),
               _mte1(profile, bm * qk_dim * dtype_bytes, qk_dim * bn * dtype_bytes,
                     math.ceil(qk_dim / BASE_K)))
    fix = _fixpipe(profile, bm * bn * ACCUMULATOR_BYTES)
    if 2 * bm * bn * ACCUMULATOR_BYTES <= profile.l0c_bytes:  # two L0C buffers
        bmm1 = blocks * max(mmad, fix) + min(mmad, fix)
    else:  # one block fills L0C: its FixPipe and the next block's MMADs take turns
        bmm1 = blocks * (mmad + fix)
    m2 = min(BMM1_BASE_M, _up16(rows))
    pv = math.ceil(rows / m2) * max(
        _mmad(profile, m2, tokens, _up16(v_dim)),
        _mte1(profile, m2 * tokens * dtype_bytes, tokens * v_dim * dtype_bytes,
              math.ceil(tokens / BASE_K)))
    bmm2 = pv + _fixpipe(profile, rows * v_dim * ACCUMULATOR_BYTES)
    return bmm1 / profile.clock_hz, bmm2 / profile.clock_hz


def _up16(n: int) -> int:
    return math.ceil(n / cube.FRACTAL) * cube.FRACTAL
