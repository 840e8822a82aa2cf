"""The GEMM on one Ascend AI Core SoC: noise-free seconds of a tiled kernel, per config.

Every hardware figure comes from the :class:`~aoe_optuna.hardware.profile.SocProfile`;
the model's own constants live in the small modules of this package and of
:mod:`aoe_optuna.aicore.pipes` with their sources, and docs/SIMULATOR.md writes the
equations out. This class only orchestrates:

    geometry (blocks, waves, K steps)
      -> per K step: MTE1 moves, MMAD cycles, scalar issue      (transfer, cube, overhead)
      -> per L1 stage: GM->L1 load, pipes combined               (transfer, layout, pipeline)
      -> per block: stages + FixPipe write-back + block setup
      -> per wave: the block time against the shared HBM and L2  (traffic)
      -> kernel: launch + waves (+ the first prefetch fill)

Vectorised over configs (numpy columns, see :mod:`aoe_optuna.space.params`). The
simulator backend measures with it (adding noise, cost and hidden failures); the
calibration fits and checks it; the REINFORCE pretraining practises on it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from aoe_optuna.aicore.gemm import (
    gemv,
    layout,
    library_l1,
    overhead,
    pipeline,
    schedule,
    traffic,
    vector_passes,
)
from aoe_optuna.aicore.gemm.geometry import Geometry, block_geometry
from aoe_optuna.aicore.pipes import cube, launch, transfer
from aoe_optuna.aicore.pipes.shared_memory import CONTENTION_P
from aoe_optuna.hardware.capacity import element_bytes, hardware_rules, l1_tile_k
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.params import default_config, to_code
from aoe_optuna.workload.gemm import Gemm

OUTPUT_ALIGN_SETUP_CYCLES = 24.0  # assumed: the extra FixPipe stride setup per block


class GemmModel:
    """Noise-free latency of GEMM tilings on an Ascend SoC, from an analytical pipe model.

    ``mmad_startup_cycles`` (default: the SoC's msKPP fit, ``pipes/cube.py``) and
    ``launch_s`` (default: ``pipes/launch.py``'s ``KERNEL_LAUNCH_S`` when the model is
    built) override the fitted figures; ``warm_l2`` prices a GEMM timed in a loop, its
    operands in L2 from the second run on (``traffic.py``); ``library_l1`` prices CANN's
    library kernel, whose A and B each have an L1 queue of their own (``library_l1.py``)
    where catlass's templates load both into one stage.
    """

    def __init__(self, profile: SocProfile, *, mmad_startup_cycles: float | None = None,
                 launch_s: float | None = None, warm_l2: bool = False,
                 library_l1: bool = False) -> None:
        self.profile = profile
        self.library_l1 = library_l1
        self.launch_s = launch.KERNEL_LAUNCH_S if launch_s is None else launch_s
        self.warm_l2 = warm_l2
        self.mmad_startup = (cube.mmad_startup_cycles(profile.soc)
                             if mmad_startup_cycles is None else mmad_startup_cycles)

    def latency(self, columns: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        """Noise-free latency (s) of each config row; NaN where a hardware rule is broken."""
        cols = complete_columns(columns)
        return np.where(self.feasible(cols, gemm), self.seconds(cols, gemm), np.nan)

    def feasible(self, cols: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        """True where the (complete) config row breaks no hardware rule of the SoC."""
        ok = np.ones(len(next(iter(cols.values()))), dtype=bool)
        for rule in hardware_rules(self.profile, gemm.dtype):
            ok &= np.asarray(rule.violation(cols)) <= 0
        return ok

    def seconds(self, cols: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        """Seconds of one launch of each (complete) config row, hardware rules unchecked.
        A tiny-N GEMM runs on the GEMV kernel where that is faster (gemv.py); a calibrated
        profile's constants of each row's kernel family apply to either."""
        seconds = self._cube_latency(cols, gemm)
        if gemv.runs_as_gemv(gemm):
            seconds = np.minimum(seconds, gemv.gemv_seconds(self.profile, gemm))
        chip = self.profile.calibration
        return seconds if chip is None else chip.gemm_seconds(cols, seconds)

    def _cube_latency(self, cols: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        """The cube kernel. A batched GEMM's blocks are ``batch`` times one matrix's grid,
        dealt to the cores together as catlass's BatchedMatmul walks them; every
        matrix streams its own operands, so its bytes count ``batch`` times."""
        p = self.profile
        clock = p.clock_hz
        m, k, n = gemm.M, gemm.K, gemm.N
        batch = float(gemm.batch)
        quant = cols["quantization"] != 0
        elem = element_bytes(cols, gemm.dtype).astype(float)
        out_bytes = float(DTYPE_BYTES[gemm.dtype])
        pad = cols["padding"] != 0
        g = block_geometry(cols["tile_m"], cols["tile_k"], cols["tile_n"],
                           l1_tile_k(cols, p), cols["split_k"], m, k, n, p.cube_cores)
        a_lay, b_lay = layout.operand_layouts(cols["layout"], cols["layout_a"], cols["layout_b"])

        # Bytes that cross HBM and L2 (shared by all cores); the share of operand loads
        # that miss L2 sets how fast one core streams (an HBM line takes longer).
        a_run, a_stride, b_run, b_stride = layout.runs_and_strides(
            a_lay, b_lay, g.rows_valid, g.cols_valid, g.depth_valid, m, k, n, elem)
        pad_bytes = vector_passes.padding_bytes(pad, m * k * elem, a_stride, k * n * elem,
                                                b_stride) * batch
        c_total = self._c_bytes(cols["output_align"], m, n, out_bytes)
        c_cube = np.where(quant | (g.splits > 1), m * n * vector_passes.WORKSPACE_BYTES
                          * g.splits, c_total)
        hbm = traffic.hbm_bytes(g, m, k, n, elem, c_cube, p.l2_bytes, cols["swizzle_offset"],
                                cols["swizzle_direction"], self.warm_l2)
        a_loaded, b_loaded = traffic.operand_bytes_loaded(g, m, k, n, elem)
        l2 = traffic.l2_bytes_moved(a_loaded, b_loaded, a_run, b_run, c_cube)
        miss = np.clip((hbm - c_cube) / (a_loaded + b_loaded), 0.0, 1.0)
        hbm, l2 = hbm * batch, l2 * batch  # one matrix's traffic, for each matrix

        # Each kind of block (full, or short in M and/or N at the matrix edge), then the
        # busiest core's sum of blocks in the swizzle's order.
        edge_rows = m - (g.blocks_m - 1) * g.tm
        edge_cols = n - (g.blocks_n - 1) * g.tn
        times: dict[tuple[bool, bool], np.ndarray] = {}
        first = np.zeros_like(g.tm)
        for last_m in (False, True):
            for last_n in (False, True):
                rows = edge_rows if last_m else g.rows_valid
                cols_ = edge_cols if last_n else g.cols_valid
                block, first_kind = self._block_cycles(cols, g, gemm, rows, cols_, a_lay,
                                                       b_lay, miss, elem, quant, pad)
                times[(last_m, last_n)] = block / clock
                if not (last_m or last_n):
                    first = first_kind
        # A batch's matrices follow one another in the task order, as K splits do.
        t_core = schedule.slowest_core_s(
            times, g.blocks_m, g.blocks_n, g.splits * batch, edge_rows < g.tm,
            edge_cols < g.tn, cols["swizzle_offset"], cols["swizzle_direction"], p.cube_cores)
        # int8 without split-K: each block's epilogue runs on its core's vector cores
        # under the cube's next block; the vector side bounds a core whose epilogues
        # take longer than its blocks, and the last block's epilogue shows after the cube.
        per_block = vector_passes.per_block_dequant(quant, g.splits)
        block_epilogue = vector_passes.dequant_block_seconds(
            transfer.gm_stream(p.gm_to_l1_bytes_per_cycle, clock), g.rows_valid,
            g.cols_valid, n, out_bytes)
        epilogue = np.where(per_block, block_epilogue, 0.0)
        t_core = np.maximum(t_core, np.ceil(g.blocks * batch / p.cube_cores) * epilogue)
        body = self._with_shared_floors(t_core, hbm, l2)

        # The vector cores' whole-GM passes (split-K sum, padding) and their hand-overs;
        # int8 with split-K dequantizes the summed C block by block after a barrier, each
        # AI core's vector pair taking the MN blocks its cube would (catlass
        # quant_multi_core_splitk_matmul_tla.hpp), so the busiest core's blocks show.
        vec_bytes = vector_passes.split_k_bytes(g.splits, m, n, out_bytes) * batch + pad_bytes
        after_sum = np.where(quant & ~per_block, np.ceil(
            g.blocks_m * g.blocks_n * batch / p.cube_cores) * block_epilogue, 0.0)
        vec_s = vec_bytes / self._vector_bandwidth(vec_bytes) + epilogue + after_sum
        hand = vector_passes.handovers(g.splits, quant, pad) * launch.HANDOVER_S
        mixed = vector_passes.uses_vector_cores(g.splits, quant, pad)
        head = self.launch_s + np.where(mixed, launch.MIX_HEAD_S, 0.0)
        return head + body + first / clock + vec_s + hand

    def _block_cycles(
        self, cols: Mapping[str, np.ndarray], g: Geometry, gemm: Gemm, rows: np.ndarray,
        width: np.ndarray, a_lay: np.ndarray, b_lay: np.ndarray, miss: np.ndarray,
        elem: np.ndarray, quant: np.ndarray, pad: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Cycles of one block of ``rows`` x ``width`` valid elements, and the first
        L1 tile's load a core waits for when preload hides it in later blocks."""
        p = self.profile
        clock = p.clock_hz
        out_bytes = float(DTYPE_BYTES[gemm.dtype])
        c0 = np.where(quant, p.c0["int8"], p.c0[gemm.dtype]).astype(float)
        pipe, prefetch = cols["pipeline"], cols["l1_prefetch"]
        rows_cube = np.ceil(rows / cube.FRACTAL) * cube.FRACTAL
        cols_cube = np.ceil(width / cube.FRACTAL) * cube.FRACTAL

        # Per K step: MTE1 (one LoadData per fractal row of A / per C0 slice of B) and MMAD
        # on the rows and columns that hold data, rounded up to the cube's fractal.
        step_k = np.ceil(g.depth_valid / g.steps_per_tile / c0) * c0
        a_instr = rows_cube / cube.FRACTAL
        b_instr = step_k / c0
        mte1 = (transfer.l1_to_l0a().cycles(rows_cube * step_k * elem, clock, a_instr)
                + transfer.l1_to_l0b().cycles(step_k * cols_cube * elem, clock, b_instr))
        mmad = cube.mmad_cycles(rows_cube, step_k, cols_cube, c0, self.mmad_startup)
        ovh = overhead.scalar_overheads(cols["opt_level"], cols["schedule"],
                                        cols["unroll_factor"], pipe, a_instr + b_instr + 1,
                                        g.k_steps)

        # Per L1 tile: GM->L1 loads of the valid part of A and B (MTE2).
        a_run, a_stride, b_run, b_stride = layout.runs_and_strides(
            a_lay, b_lay, rows, width, g.depth_valid, gemm.M, gemm.K, gemm.N, elem)
        a_stride = np.where(pad, vector_passes.aligned(a_stride), a_stride)
        b_stride = np.where(pad, vector_passes.aligned(b_stride), b_stride)
        stream = transfer.gm_stream(p.gm_to_l1_bytes_per_cycle, clock)
        load_a = stream.seconds(rows * g.depth_valid * elem, a_run, a_stride, miss) * clock
        load_b = stream.seconds(width * g.depth_valid * elem, b_run, b_stride, miss) * clock
        load = load_a + load_b
        lat = np.full_like(load, transfer.gm_to_l1().startup_s * clock)
        steps = g.steps_per_tile
        compute = pipeline.stage_compute_cycles(pipe, steps, mte1, mmad, ovh.issue_per_step,
                                                ovh.bubble_per_step)
        period = pipeline.stage_period_cycles(pipe, prefetch, steps, lat, load, compute)
        if self.library_l1:  # CANN's library kernel: an L1 queue per operand
            depth_a, depth_b = library_l1.queue_depths(p.l1_bytes, g.tm, g.tn, g.tk, elem,
                                                       gemm.K)
            own = pipeline.own_queues_period_cycles(compute, load_a, load_b, lat, depth_a,
                                                    depth_b, g.depth_valid)
            period = np.where((prefetch != 0) & (pipe != 0), own, period)

        # The block: its L1 tiles, then FixPipe writes L0C back (partly under the cube with
        # unit flag); how the first tile's load shows is pipeline.block_tiles_cycles's job.
        fix = self._fixpipe_cycles(g, rows, width, cols["output_align"], gemm.N, out_bytes,
                                   clock, quant, g.splits)
        fix = pipeline.exposed_fixpipe_cycles(fix, mmad, cols["unit_flag"] != 0)
        fill = pipeline.fill_cycles(pipe, prefetch, g.l1_tiles, mte1, mmad)
        tiles, first = pipeline.block_tiles_cycles(
            pipe, prefetch, cols["preload"] != 0, g.l1_tiles, steps, lat, load, compute,
            period, fix)
        return tiles + fill + ovh.per_block, first

    def _with_shared_floors(self, t_core: np.ndarray, hbm: np.ndarray,
                            l2: np.ndarray) -> np.ndarray:
        """The busiest core's time against the HBM and L2 floors of the whole kernel."""
        t_hbm = hbm / self.profile.hbm_bandwidth()
        t_l2 = l2 / (self.profile.l2_bandwidth_gbs * 1e9)
        if CONTENTION_P == 4.0:  # the default, without fractional powers (hot path)
            return np.sqrt(np.sqrt(np.square(np.square(t_core)) + np.square(np.square(t_hbm))
                                   + np.square(np.square(t_l2))))
        q = CONTENTION_P
        return (t_core**q + t_hbm**q + t_l2**q) ** (1.0 / q)

    @staticmethod
    def _c_bytes(align: np.ndarray, m: int, n: int, out_bytes: float) -> np.ndarray:
        """C bytes written to HBM: rows padded to 512 B when output_align is on."""
        row = n * out_bytes
        padded = np.ceil(row / transfer.LINE_BYTES) * transfer.LINE_BYTES
        return m * np.where(align != 0, padded, row)

    def _vector_bandwidth(self, nbytes: np.ndarray) -> np.ndarray:
        """Bytes/s of a vector pass: L2 while its data fits there, HBM past it."""
        fits = nbytes <= self.profile.l2_bytes * traffic.L2_USABLE_FRACTION
        return np.where(fits, self.profile.l2_bandwidth_gbs * 1e9, self.profile.hbm_bandwidth())

    @staticmethod
    def _fixpipe_cycles(g: Geometry, rows: np.ndarray, width: np.ndarray, align: np.ndarray,
                        n: int, out_bytes: float, clock: float, quant: np.ndarray,
                        splits: np.ndarray) -> np.ndarray:
        """L0C -> GM of one block: one burst per row, each row rounded to touched lines.

        A row segment starts on a line boundary when both the tile width and the
        row stride of C (N, or N padded by output_align) are multiples of a line.
        """
        line = transfer.LINE_BYTES
        # int8 and split-K write 4-byte accumulators to a workspace instead of C
        out_bytes = np.where(quant | (splits > 1), vector_passes.WORKSPACE_BYTES, out_bytes)
        seg = width * out_bytes
        stride_aligned = (align != 0) | ((n * out_bytes) % line == 0)
        start_aligned = stride_aligned & ((g.tn * out_bytes) % line == 0)
        lines = np.ceil(seg / line) + np.where(start_aligned, 0.0, 1.0)
        moved = rows * np.minimum(lines * line, seg + 2 * line)
        fit = transfer.l0c_to_gm()
        setup = np.where(align != 0, OUTPUT_ALIGN_SETUP_CYCLES, 0.0)
        return fit.cycles(moved, clock) + setup


def complete_columns(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Columns with every known tunable present (missing ones at their default code)."""
    cols = {k: np.asarray(v) for k, v in columns.items()}
    n = len(next(iter(cols.values())))
    for name, value in default_config().items():
        if name not in cols:
            cols[name] = np.full(n, to_code(name, value))
    return cols
