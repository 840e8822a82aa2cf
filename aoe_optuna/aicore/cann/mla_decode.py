"""CANN's MLA decode kernel (fused infer attention, the non-quantised MLA path) on a 910B.

What a deployment runs for absorbed MLA decode is ``npu_fused_infer_attention_score``
with a latent KV head and a separate rope key: hicann/ops-transformer
``attention/common/op_kernel/arch32/fia_kernel_nonquant_mla.h`` with
``fia_block_cube_nonquant_mla.h`` (cube) and ``fia_block_vec_nonquant_mla.h``
(vector), tiled by ``op_host/arch32/fia_tiling_nonquant_mla.cpp``. This module
prices it with the simulator's existing physics; no constant was set from an
MLA timing.

* **Blocks and cores**: :mod:`.fia_split` (the host's ``SplitCore``): blocks of
  one sequence's Q heads by 512 keys, dealt to the cube cores, a sequence cut
  across cores combined afterwards (flash decoding).
* **Per block, cube** (``ComputeMm1``/``ComputeMm2``): QK^T walks the keys 128
  at a time and the 576 values in two halves of 288 (256 latent + 32 rope),
  each half a GM->L1 load of the latent and rope caches (runs of 512 B and
  64 B a token) and, the first time, of Q; three MMADs 96 deep; S leaves by
  FixPipe as fp32. PV walks V (the latent, read again from L2) in 128-column
  strips of 256 keys (runs of 256 B a token), P back from GM, two MMADs 128 deep
  a strip; O is FixPipe'd into an fp32 GM accumulator (atomic add). Loads,
  MMADs and FixPipe overlap through the three-buffer L1 ring and ping-pong L0C:
  each product lasts its slowest pipe plus its first load.
* **Per block, vector** (``ProcessVec1L``, ``ProcessAmlaNupdate``,
  ``ProcessVec2L``): each of the two vector cores takes half the rows, reads S
  in 32 KiB chunks, scales, runs the online softmax, AMLA's per-row power-of-two
  rescale and the cast to P, writes P; then adds the rescale exponent into the
  GM accumulator (atomic int32 adds over its rows x 512), which replaces the
  running-O rescale; at a sequence's last block it reads O, normalises and
  writes it.
* **Pipeline** (``PreloadPipeline``, two tasks preloaded): the cube runs
  QK^T of block i then PV of block i-1, which waits for the vector's softmax of
  block i-1; so a block costs the cube's two products or the vector's work,
  whichever is longer, and the last block's softmax and output pass are
  exposed.

Rates: MMAD (pipes/cube.py, msKPP), GM->L1 streaming per run and line (pipes/transfer.py,
the GEMM fit) at a lone core's msKPP rate, the latent cache from HBM never
faster than the core's share of HBM bandwidth, FixPipe (msKPP), vector
instructions and GM<->UB copies (pipes/vector_pipe.py, msKPP), the combine and
hand-over of attention/steps.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aoe_optuna.aicore.attention.decode_attention import AttentionCost
from aoe_optuna.aicore.attention.mla_attention import roofline_s
from aoe_optuna.aicore.attention.steps import combine_s, core_stream
from aoe_optuna.aicore.cann import fia_split
from aoe_optuna.aicore.pipes import cube, transfer
from aoe_optuna.aicore.pipes import vector_pipe as vp
from aoe_optuna.aicore.pipes.launch import MIX_HEAD_S
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import ACCUMULATOR_BYTES, FRACTAL

# fia_block_cube_nonquant_mla.h
M_L1 = 128  # M_L1_SPLIT_SIZE: rows per L1 piece
N_L1 = 128  # N_L1_SPLIT_SIZE: keys per QK^T strip, V columns per PV strip
MM1_K_L0 = 96  # MM1_K_L0_SPLIT_SIZE
MM2_K_L1 = 256  # keys per PV load
MM2_K_L0 = 128  # MM2_K_L0_SPLIT_SIZE
# fia_block_vec_nonquant_mla.h: 32 KiB of fp32 per vector chunk
VEC_CHUNK_ELEMENTS = 32 * 1024 // ACCUMULATOR_BYTES
NUPDATE_GROUP = 128  # ProcessAmlaNupdate dGroupSize: the exponent broadcast 128 wide
# Vector instructions on every score of a chunk (DealBmm1ResBaseBlock): scale (Muls),
# SoftmaxFlashV2's max, subtract, exp and sum, AMLA's RowMuls, the cast to P.
SCORE_OPS = ("muls", "reduce", "add", "exp", "reduce", "mul")
# Per-row instructions of SoftmaxFlashV2's update and AmlaVecCompute (counted in the
# source: Muls, Cast, Sub, Adds, Add, Exp, Div, Maxs, Brcb ...), each on a row vector.
ROW_OPS = 26
# ProcessVec2: Abs, CompareScalar, Select, RowDivs on every O element, then the cast.
OUTPUT_OPS = ("adds", "adds", "adds", "div")


@dataclass(frozen=True)
class BlockCost:
    """Seconds of one block (a sequence's heads by up to 512 keys) on one AI core."""

    qk_s: float  # cube: QK^T with its loads and FixPipe
    pv_s: float  # cube: PV with its loads and FixPipe
    softmax_s: float  # one vector core: S in, softmax, P out
    rescale_s: float  # one vector core: the exponent added into the GM accumulator
    output_s: float  # one vector core: O read, normalised, written (a sequence's last)
    stream_s: float  # the block's GM->L1 time (both products)


def _gm(profile: SocProfile, nbytes: float, run: float, stride: float, miss: float) -> float:
    st = core_stream(profile)
    return float(st.seconds(np.array(float(nbytes)), np.array(float(run)),
                            np.array(int(stride)), np.array(miss)))


def _mmad_s(profile: SocProfile, m: int, k: int, n: int) -> float:
    c = cube.mmad_cycles(np.array(m), np.array(k), np.array(n), np.array(profile.c0["fp16"]),
                         cube.mmad_startup_cycles(profile.soc))
    return float(c) / profile.clock_hz


def _fixpipe_s(profile: SocProfile, nbytes: float, writes: int) -> float:
    return float(transfer.l0c_to_gm().cycles(np.array(nbytes), profile.clock_hz,
                                             writes)) / profile.clock_hz


def _l1_to_l0_s(profile: SocProfile, a_bytes: float, b_bytes: float, loads: int) -> float:
    clock = profile.clock_hz
    return float(transfer.l1_to_l0a().cycles(np.array(a_bytes), clock, loads)
                 + transfer.l1_to_l0b().cycles(np.array(b_bytes), clock, loads)) / clock


def _products(profile: SocProfile, shape: MlaDecodeAttention, keys: int, q_rows: int,
              hbm_share_s: float) -> tuple[float, float, float]:
    """Seconds of QK^T and PV of one block of ``q_rows`` query rows, and its GM->L1 time."""
    b, lat, rope = shape.dtype_bytes, shape.kv_lora_rank, shape.qk_rope_head_dim
    rows = math.ceil(q_rows / FRACTAL) * FRACTAL
    pieces = math.ceil(rows / M_L1)
    strips = math.ceil(keys / N_L1)
    # QK^T: per strip of 128 keys and half of the 576 values, the latent half
    # (runs of lat/2 values a token, from HBM) and the rope half (runs of rope/2,
    # one line shared by several tokens and both halves), Q once per block.
    lat_half, rope_half = lat // 2 * b, rope // 2 * b
    # the first half's runs meet each line first (a line holds LINE / (rope x b) tokens);
    # the second half's find it in L2
    rope_miss = min(1.0, rope * b / transfer.LINE_BYTES)
    k_s = 0.0
    for n in [N_L1] * (keys // N_L1) + ([keys % N_L1] if keys % N_L1 else []):
        k_s += 2 * _gm(profile, n * lat_half, lat_half, lat * b, 1.0)
        k_s += _gm(profile, n * rope_half, rope_half, rope * b, rope_miss)
        k_s += _gm(profile, n * rope_half, rope_half, rope * b, 0.0)
    k_s = max(k_s, hbm_share_s)
    q_s = 2 * (_gm(profile, rows * lat_half, lat_half, lat * b, 0.0)
               + _gm(profile, rows * rope_half, rope_half, rope * b, 0.0))
    half = (lat + rope) // 2
    mm1 = 2 * strips * pieces * math.ceil(half / MM1_K_L0) * _mmad_s(profile, min(rows, M_L1),
                                                                      MM1_K_L0, N_L1)
    l0_1 = _l1_to_l0_s(profile, rows * (lat + rope) * b * strips, keys * (lat + rope) * b,
                       2 * strips * pieces * math.ceil(half / MM1_K_L0))
    fix1 = _fixpipe_s(profile, rows * keys * ACCUMULATOR_BYTES, strips * pieces)
    first1 = (k_s + q_s) / (2 * strips)
    qk_s = max(k_s + q_s, mm1, l0_1, fix1) + first1
    # PV: per 128-column strip of V and 256 keys, V again from L2 (runs of 128 values
    # a token), P (rows x 256 keys) once per key chunk, two MMADs 128 deep a strip.
    cols = math.ceil(lat / N_L1)
    chunks = math.ceil(keys / MM2_K_L1)
    v_s = cols * _gm(profile, keys * N_L1 * b, N_L1 * b, lat * b, 0.0)
    p_s = chunks * _gm(profile, rows * min(keys, MM2_K_L1) * b, min(keys, MM2_K_L1) * b,
                       keys * b, 0.0)
    mm2 = cols * pieces * math.ceil(keys / MM2_K_L0) * _mmad_s(profile, min(rows, M_L1),
                                                                MM2_K_L0, N_L1)
    l0_2 = _l1_to_l0_s(profile, rows * keys * b * cols, keys * lat * b,
                       cols * pieces * math.ceil(keys / MM2_K_L0))
    fix2 = _fixpipe_s(profile, rows * lat * ACCUMULATOR_BYTES, cols * pieces)
    first2 = (v_s + p_s) / (cols * chunks)
    pv_s = max(v_s + p_s, mm2, l0_2, fix2) + first2
    return qk_s, pv_s, k_s + q_s + v_s + p_s


def _vector(profile: SocProfile, shape: MlaDecodeAttention, keys: int, q_rows: int,
            aivs: int) -> tuple[float, float, float]:
    """One vector core's softmax, rescale and output pass of one block, in seconds."""
    b, lat = shape.dtype_bytes, shape.kv_lora_rank
    heads = q_rows
    # ProcessVec1L: the first vector core takes ceil(rows / 32) x 16 rows, the other the rest
    rows = heads if heads <= FRACTAL else (math.ceil(heads / FRACTAL) + 1) // 2 * FRACTAL
    width = math.ceil(keys / 8) * 8  # fp32 32 B blocks
    per_chunk = max(8, VEC_CHUNK_ELEMENTS // width // 8 * 8)
    clock = profile.clock_hz
    soft = 0.0
    for r in [per_chunk] * (rows // per_chunk) + ([rows % per_chunk] if rows % per_chunk else []):
        n = r * width
        compute = (sum(float(vp.instruction_cycles(op, n)) for op in SCORE_OPS)
                   + float(vp.instruction_cycles("cast_fp32_fp16", n))
                   + ROW_OPS * float(vp.instruction_cycles("muls", r))) / clock
        s_in = float(vp.copy_seconds(profile, n * ACCUMULATOR_BYTES, n * ACCUMULATOR_BYTES,
                                     n * ACCUMULATOR_BYTES, aivs))
        p_out = float(vp.copy_seconds(profile, r * keys * b, r * keys * b, r * keys * b, aivs,
                                      write=True))
        soft += max(s_in, compute + p_out)
    rescale = float(vp.copy_seconds(profile, rows * lat * ACCUMULATOR_BYTES,
                                    NUPDATE_GROUP * ACCUMULATOR_BYTES, lat * ACCUMULATOR_BYTES,
                                    aivs, write=True))
    out_rows = max(1, VEC_CHUNK_ELEMENTS // lat)
    output = 0.0
    for r in [out_rows] * (rows // out_rows) + ([rows % out_rows] if rows % out_rows else []):
        n = r * lat
        compute = (sum(float(vp.instruction_cycles(op, n)) for op in OUTPUT_OPS)
                   + float(vp.instruction_cycles("cast_fp32_fp16", n))) / clock
        o_in = float(vp.copy_seconds(profile, n * ACCUMULATOR_BYTES, n * ACCUMULATOR_BYTES,
                                     n * ACCUMULATOR_BYTES, aivs))
        o_out = float(vp.copy_seconds(profile, n * b, n * b, n * b, aivs, write=True))
        output += max(o_in, compute + o_out)
    return soft, rescale, output


def block_cost(profile: SocProfile, shape: MlaDecodeAttention, keys: int,
               busy_cores: int, query_tokens: int = 1) -> BlockCost:
    """One block of ``keys`` keys while ``busy_cores`` AI cores stream alike; a
    sequence's ``query_tokens`` x Q heads are the block's rows (decode: one token)."""
    q_rows = shape.q_heads * query_tokens
    hbm_share = busy_cores * keys * shape.kv_lora_rank * shape.dtype_bytes \
        / profile.hbm_bandwidth()
    qk, pv, stream = _products(profile, shape, keys, q_rows, hbm_share)
    soft, rescale, output = _vector(profile, shape, keys, q_rows, 2 * busy_cores)
    return BlockCost(qk, pv, soft, rescale, output, stream)


def _core_seconds(blocks: tuple[tuple[int, int], ...],
                  costs: dict[int, BlockCost]) -> tuple[float, BlockCost]:
    """One core's blocks through the preload pipeline: per block the cube's two
    products or the vector's work, whichever is longer; the last softmax past the
    cube's last PV and the last output pass exposed."""
    total, vector_total = 0.0, 0.0
    last_cost = None
    for i, (seq, keys) in enumerate(blocks):
        c = costs[keys]
        first_of_seq = i == 0 or blocks[i - 1][0] != seq
        last_of_seq = i == len(blocks) - 1 or blocks[i + 1][0] != seq
        vec = c.softmax_s + (0.0 if first_of_seq else c.rescale_s) \
            + (c.output_s if last_of_seq else 0.0)
        total += max(c.qk_s + c.pv_s, vec)
        vector_total += vec
        last_cost = c
    assert last_cost is not None
    c = last_cost
    tail = max(0.0, c.softmax_s + c.rescale_s - c.pv_s) + c.output_s
    return max(total + tail, vector_total), c


def cann_mla_decode_cost(profile: SocProfile, shape: MlaDecodeAttention,
                         query_tokens: int = 1) -> AttentionCost:
    """Modelled time of one MLA decode call by CANN's fused infer attention kernel;
    ``query_tokens`` > 1 is multi-token-prediction decode (a sequence's tokens and
    heads one row block; the causal mask's selects are not counted)."""
    rows = shape.q_heads * query_tokens
    dealing = fia_split.deal(shape.batch, rows, shape.context, profile.cube_cores)
    busy = len(dealing.cores)
    costs = {keys: block_cost(profile, shape, keys, busy, query_tokens)
             for keys in {k for blocks in dealing.cores for _, k in blocks}}
    times = [_core_seconds(blocks, costs) for blocks in dealing.cores]
    worst = max(range(busy), key=lambda i: times[i][0])
    main_s, c = times[worst]
    n = len(dealing.cores[worst])
    combine = 0.0
    if dealing.fd_heads:
        combine = combine_s(profile, dealing.fd_heads * rows, dealing.max_split,
                            shape.v_dim, shape.dtype_bytes)
    floor = roofline_s(profile, shape)
    return AttentionCost(
        total_s=max(main_s + combine + MIX_HEAD_S, floor),
        stream_s=n * c.stream_s, cube_s=n * (c.qk_s + c.pv_s),
        vector_s=n * (c.softmax_s + c.rescale_s), combine_s=combine,
        busy_cores=busy, roofline_s=floor)


def cann_mla_decode_seconds(profile: SocProfile, shape: MlaDecodeAttention) -> float:
    """Seconds of one call of CANN's kernel: the step's ``default`` MLA charge."""
    return cann_mla_decode_cost(profile, shape).total_s
