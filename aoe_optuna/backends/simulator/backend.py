"""AscendSimulator: an analytical model of a tiled GEMM on one Ascend AI Core SoC.

The embedded default backend. Every hardware figure comes from the
:class:`~aoe_optuna.hardware.profile.SocProfile`; the model's own constants live in
the small modules of :mod:`aoe_optuna.backends.simulator` with their sources, and
docs/SIMULATOR.md writes the equations out. This class only orchestrates:

    geometry (blocks, waves, K steps)
      -> per K step: MTE1 moves, MMAD cycles, scalar issue      (transfer, cube, overhead)
      -> per L1 stage: GM->L1 load, pipes combined               (transfer, layout, pipeline)
      -> per block: stages + FixPipe write-back + block setup
      -> per wave: the block time against the shared HBM and L2  (traffic)
      -> kernel: launch + waves (+ the first prefetch fill)

``latency`` is vectorised over configs (numpy columns, see
:mod:`aoe_optuna.space.params`) and noise-free; ``measure`` runs one config the
way the objective does, with noise, cost, hidden failures and int8 accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aoe_optuna.backends.base import BackendBase, Measurement
from aoe_optuna.backends.simulator import (
    cube,
    layout,
    measure,
    overhead,
    pipeline,
    traffic,
    transfer,
)
from aoe_optuna.backends.simulator.geometry import Geometry, block_geometry
from aoe_optuna.hardware.capacity import element_bytes, hardware_rules, l1_stages
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.params import KNOWN_PARAMS, canonical_value, default_config, to_code
from aoe_optuna.workload.models import Gemm

# Fitted (least squares on log TFLOPS) to the five torch_npu square fp16 figures
# on 910B2 (reference "External calibration figures") by
# scripts/calibrate_simulator.py: the host launch and kernel start/end a GEMM
# pays whatever its tiling.
KERNEL_LAUNCH_S = 8.5e-6
# Queueing near a shared limit: the wave time is the p-norm of the core's own
# time and the HBM and L2 floors (p -> infinity would be a hard max). Assumed:
# a wave whose core demand equals the HBM supply runs 19% slower than either.
CONTENTION_P = 4.0
OUTPUT_ALIGN_SETUP_CYCLES = 24.0  # assumed: the extra FixPipe stride setup per block
DEFAULT_HIDDEN_RESERVE_KIB = 128  # hidden_failures=true: L1 the host tiling keeps back

_OPTIONS = ("noise, seed, hidden_failures, build_s, warmup, repeats, mmad_startup_cycles, "
            "launch_us")


@dataclass(frozen=True)
class MeasurementPlan:
    """How a simulated measurement is charged: build seconds, warm-up and timed runs."""

    build_s: float = 30.0  # assumed: one CANN kernel build (ascendc.cmake) in tens of seconds
    warmup: int = 10
    repeats: int = 100


class AscendSimulator(BackendBase):
    """Latency of GEMM tilings on an Ascend SoC, from an analytical pipe model."""

    name = "simulator"

    def __init__(
        self,
        profile: SocProfile,
        noise: float = 0.0,
        seed: int = 0,
        *,
        hidden_failures: bool | float = False,
        build_s: float = MeasurementPlan.build_s,
        warmup: int = MeasurementPlan.warmup,
        repeats: int = MeasurementPlan.repeats,
        mmad_startup_cycles: float | None = None,
        launch_us: float = KERNEL_LAUNCH_S * 1e6,
    ) -> None:
        self.profile = profile
        self.noise = _number("noise", noise, low=0.0, high=1.0)
        self.seed = _integer("seed", seed, low=0)
        self.hidden_reserve_bytes = _hidden_reserve(hidden_failures)
        self.plan = MeasurementPlan(
            build_s=_number("build_s", build_s, low=0.0),
            warmup=_integer("warmup", warmup, low=0),
            repeats=_integer("repeats", repeats, low=1),
        )
        self.launch_s = _number("launch_us", launch_us, low=0.0) * 1e-6
        # Tiling constants are compile-time, shapes run-time: one build serves every
        # GEMM of a workload, as the cpu/npu backends' build caches make it on hardware.
        self._built: set[tuple[tuple[str, Any], ...]] = set()
        self.mmad_startup = (
            cube.mmad_startup_cycles(profile.soc) if mmad_startup_cycles is None
            else _number("mmad_startup_cycles", mmad_startup_cycles, low=0.0)
        )

    @classmethod
    def from_options(cls, options: Mapping[str, Any], profile: SocProfile) -> AscendSimulator:
        """Build from a spec's backend section (without ``name``)."""
        unknown = [k for k in options if k not in _OPTIONS.split(", ")]
        if unknown:
            raise ValueError(f"{unknown[0]}: expected one of the simulator options "
                             f"({_OPTIONS}), got an unknown option")
        return cls(profile, **dict(options))

    # ------------------------------------------------------------------ model
    def latency(self, columns: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        """Noise-free latency (s) of each config row.

        NaN where a hardware rule is broken, and, with ``hidden_failures`` on,
        where GetTiling would refuse the config: neither can be measured.
        """
        cols = _complete(columns)
        seconds = self._latency(cols, gemm)
        ok = ~self.hidden_failures(cols, gemm)
        for rule in hardware_rules(self.profile, gemm.dtype):
            ok &= np.asarray(rule.violation(cols)) <= 0
        return np.where(ok, seconds, np.nan)

    def hidden_failures(self, columns: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        """True where GetTiling would refuse a config the known rules accept."""
        cols = _complete(columns)
        n = len(next(iter(cols.values())))
        if self.hidden_reserve_bytes is None:
            return np.zeros(n, dtype=bool)
        need = ((cols["tile_m"] + cols["tile_n"]) * cols["tile_k"] * self.profile.l1_k_steps
                * element_bytes(cols, gemm.dtype) * l1_stages(cols))
        return measure.hidden_l1_failures(need, self.profile.l1_bytes, self.hidden_reserve_bytes)

    def measure(self, config: Mapping[str, Any], gemm: Gemm) -> Measurement:
        """One config as the objective sees it: failure, or a noisy latency and its cost."""
        full = {k: canonical_value(k, v) if k in KNOWN_PARAMS else v
                for k, v in {**default_config(), **dict(config)}.items()}
        cols = {k: np.array([to_code(k, v)]) for k, v in full.items() if k in KNOWN_PARAMS}
        broken = [r.describe(cols) for r in hardware_rules(self.profile, gemm.dtype)
                  if np.asarray(r.violation(cols))[0] > 0]
        if broken:
            return Measurement.failure("infeasible", "; ".join(broken))
        if self.hidden_failures(cols, gemm)[0]:
            reserve = self.hidden_reserve_bytes or 0
            return Measurement.failure(
                "build",
                f"GetTiling returned -1: L1 blocks leave less than the {reserve // 1024} KiB "
                "the host tiling reserves for bias/scale/workspace",
                cost_s=self.plan.build_s / 10,
            )
        clean = float(self._latency(cols, gemm)[0])
        latency_s = clean * measure.noise_factor(self.noise, self.seed, full, gemm)
        extra: dict[str, Any] = {"model_latency_s": clean}
        if full["quantization"]:
            extra["accuracy_loss"] = measure.int8_relative_error(gemm.K)
        key = tuple(sorted(full.items()))
        build_s = 0.0 if key in self._built else self.plan.build_s
        self._built.add(key)
        cost = measure.measurement_cost_s(latency_s, build_s, self.plan.warmup,
                                          self.plan.repeats)
        return Measurement.success(latency_s, cost, spread=self.noise or None, extra=extra)

    def _latency(self, cols: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        p = self.profile
        clock = p.clock_hz
        m, k, n = gemm.M, gemm.K, gemm.N
        quant = cols["quantization"] != 0
        elem = element_bytes(cols, gemm.dtype).astype(float)
        c0 = np.where(quant, p.c0["int8"], p.c0[gemm.dtype]).astype(float)
        out_bytes = float(DTYPE_BYTES[gemm.dtype])
        pipe, prefetch, lay = cols["pipeline"], cols["l1_prefetch"], cols["layout"]
        g = block_geometry(cols["tile_m"], cols["tile_k"], cols["tile_n"], m, k, n,
                           p.cube_cores, p.l1_k_steps)

        # Per K step: MTE1 (one LoadData per fractal row of A / per C0 slice of B) and MMAD.
        a_instr = np.ceil(g.tm / cube.FRACTAL)
        b_instr = np.ceil(g.tk / c0)
        mte1 = (transfer.l1_to_l0a().cycles(g.tm * g.tk * elem, clock, a_instr)
                + transfer.l1_to_l0b().cycles(g.tk * g.tn * elem, clock, b_instr))
        mmad = cube.mmad_cycles(g.tm, g.tk, g.tn, c0, self.mmad_startup)
        ovh = overhead.scalar_overheads(cols["opt_level"], cols["schedule"],
                                        cols["unroll_factor"], pipe, a_instr + b_instr + 1,
                                        g.k_steps)

        # Per L1 stage: GM->L1 loads of the valid part of A and B.
        steps = g.steps_per_stage
        stage_k = np.minimum(g.tk * steps, k)
        a_run, b_run = layout.contiguous_runs(lay, g.rows_valid, g.cols_valid, stage_k, elem)
        gm = transfer.gm_to_l1()
        plain_gbs = gm.bytes_per_s / 1e9
        nd = layout.converts_on_load(lay)
        a_eff = np.where(nd, transfer.nd2nz().efficiency(a_run, plain_gbs), 1.0)
        b_eff = np.where(nd, transfer.nd2nz().efficiency(b_run, plain_gbs), 1.0)
        a_stage = g.rows_valid * stage_k * elem
        b_stage = g.cols_valid * stage_k * elem
        load = (a_stage / a_eff + b_stage / b_eff) / gm.bytes_per_s * clock
        lat = np.full_like(load, gm.startup_s * clock)
        compute = pipeline.stage_compute_cycles(pipe, steps, mte1, mmad, ovh.issue_per_step,
                                                ovh.bubble_per_step)
        period = pipeline.stage_period_cycles(pipe, prefetch, steps, lat, load, compute)

        # Per block: stages, then FixPipe writes L0C back (dbL0C = 1: not overlapped).
        fix = self._fixpipe_cycles(g, cols["output_align"], n, out_bytes, clock)
        fill = pipeline.fill_cycles(pipe, prefetch, g.stages, mte1, mmad)
        block = g.stages * period + fill + fix + ovh.per_block
        first_fill = np.where((prefetch != 0) & (pipe > 0), lat + load, 0.0)

        # Per wave: the core's own time against the HBM and L2 floors of its share of traffic.
        c_total = self._c_bytes(cols["output_align"], m, n, out_bytes)
        hbm = traffic.hbm_bytes(g, m, k, n, elem, c_total, p.l2_bytes)
        a_loaded, b_loaded = traffic.operand_bytes_loaded(g, m, k, n, elem)
        l2 = traffic.l2_bytes_moved(a_loaded, b_loaded, a_run, b_run, c_total)
        t_core = block / clock
        waves_s = ((g.waves - 1) * self._wave_s(t_core, hbm, l2, g.active_full / g.blocks)
                   + self._wave_s(t_core, hbm, l2, g.active_last / g.blocks))
        return self.launch_s + waves_s + first_fill / clock

    def _wave_s(self, t_core: np.ndarray, hbm: np.ndarray, l2: np.ndarray,
                share: np.ndarray) -> np.ndarray:
        t_hbm = hbm * share / self.profile.hbm_bandwidth()
        t_l2 = l2 * share / (self.profile.l2_bandwidth_gbs * 1e9)
        if CONTENTION_P == 4.0:  # the default, without fractional powers (hot path)
            return np.sqrt(np.sqrt(np.square(np.square(t_core)) + np.square(np.square(t_hbm))
                                   + np.square(np.square(t_l2))))
        q = CONTENTION_P
        return (t_core**q + t_hbm**q + t_l2**q) ** (1.0 / q)

    @staticmethod
    def _c_bytes(align: np.ndarray, m: int, n: int, out_bytes: float) -> np.ndarray:
        """C bytes written to HBM: rows padded to 512 B when output_align is on."""
        row = n * out_bytes
        padded = np.ceil(row / traffic.LINE_BYTES) * traffic.LINE_BYTES
        return m * np.where(align != 0, padded, row)

    @staticmethod
    def _fixpipe_cycles(g: Geometry, align: np.ndarray, n: int, out_bytes: float,
                        clock: float) -> np.ndarray:
        """L0C -> GM of one block: one burst per row, each row rounded to touched lines.

        A row segment starts on a line boundary when both the tile width and the
        row stride of C (N, or N padded by output_align) are multiples of a line.
        """
        line = traffic.LINE_BYTES
        seg = g.cols_valid * out_bytes
        stride_aligned = (align != 0) | ((n * out_bytes) % line == 0)
        start_aligned = stride_aligned & ((g.tn * out_bytes) % line == 0)
        lines = np.ceil(seg / line) + np.where(start_aligned, 0.0, 1.0)
        moved = g.rows_valid * np.minimum(lines * line, seg + 2 * line)
        fit = transfer.l0c_to_gm()
        setup = np.where(align != 0, OUTPUT_ALIGN_SETUP_CYCLES, 0.0)
        return fit.cycles(moved, clock) + setup


# ---------------------------------------------------------------------- helpers
def _complete(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Columns with every known tunable present (missing ones at their default code)."""
    cols = {k: np.asarray(v) for k, v in columns.items()}
    n = len(next(iter(cols.values())))
    for name, value in default_config().items():
        if name not in cols:
            cols[name] = np.full(n, to_code(name, value))
    return cols


def _number(name: str, value: Any, low: float, high: float | None = None) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or value < low or (high is not None and value > high):
        bound = f"from {low:g} to {high:g}" if high is not None else f">= {low:g}"
        raise ValueError(f"{name}: expected a number {bound}, got {value!r}")
    return float(value)


def _integer(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
    return int(value)


def _hidden_reserve(value: Any) -> int | None:
    """hidden_failures: false (off), true (the default reserve) or a reserve in KiB."""
    if value is False or value is None:
        return None
    if value is True:
        return DEFAULT_HIDDEN_RESERVE_KIB * 1024
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return int(value * 1024)
    raise ValueError(f"hidden_failures: expected true, false or the L1 KiB the host tiling "
                     f"reserves (a positive number), got {value!r}")
