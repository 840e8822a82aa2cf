"""Data movers of one core: start-up cost plus bytes over bandwidth, and GM streaming.

The on-chip movers (L1->L0A/L0B, FixPipe) are ``time = startup + bytes /
bandwidth`` per instruction, both constants fitted (linear least squares on
time vs size) to msKPP's single-core tables in
:mod:`aoe_optuna.hardware.measured_core`. The GM->L1 DataCopy start-up (about 0.4 us,
the HBM latency) comes from the same tables.

Streaming a tile from GM (:class:`StreamCosts`) is priced per contiguous run
and per 512 B cache line the run touches, with an L2 hit cheaper than an HBM
line: short rows, rows that end inside a line and rows that straddle lines
(a stride that is not a multiple of 512 B) all move fewer bytes per second,
which is why catlass pads rows to 512 B and advises tile sizes that are
multiples of 256 elements. ND sources are converted to the fractal layout on
the way (nd2nz); a zN source is one long run per 16-row panel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from aoe_optuna.hardware import measured_core

FRACTAL_BYTES = 512


@dataclass(frozen=True)
class MoverFit:
    """``seconds = startup_s + bytes / bytes_per_s`` for one instruction."""

    startup_s: float
    bytes_per_s: float

    def cycles(
        self, nbytes: np.ndarray, clock_hz: float, instructions: np.ndarray | float = 1.0
    ) -> np.ndarray:
        """Cycles to move ``nbytes`` split over ``instructions`` instructions."""
        return (instructions * self.startup_s + nbytes / self.bytes_per_s) * clock_hz


def _linear_fit(sizes: np.ndarray, gbs: np.ndarray) -> MoverFit:
    seconds = sizes / (gbs * 1e9)
    slope, intercept = np.polyfit(sizes, seconds, 1)
    return MoverFit(startup_s=max(float(intercept), 0.0), bytes_per_s=1.0 / float(slope))


@cache
def gm_to_l1() -> MoverFit:
    """GM->L1 DataCopy (msKPP GM_TO_L1_910b1; 4096 B per burst)."""
    rows = np.array(measured_core.GM_TO_L1_910B1)
    return _linear_fit(rows[:, 0] * measured_core.GM_TO_L1_BURST_BYTES, rows[:, 1])


@cache
def l1_to_l0a() -> MoverFit:
    """L1->L0A LoadData, 512 B per repeat (msKPP L1_TO_L0A_910b1)."""
    rows = np.array(measured_core.L1_TO_L0A_910B1)
    return _linear_fit(rows[:, 0] * FRACTAL_BYTES, rows[:, 1])


@cache
def l1_to_l0b() -> MoverFit:
    """L1->L0B LoadData, 512 B per repeat (msKPP L1_TO_L0B_910b1)."""
    rows = np.array(measured_core.L1_TO_L0B_910B1)
    return _linear_fit(rows[:, 0] * FRACTAL_BYTES, rows[:, 1])


@cache
def l0c_to_gm() -> MoverFit:
    """FixPipe L0C->GM: flat time for small writes, then bandwidth-bound.

    Start-up = the time of a one-burst write; bandwidth = the median of the
    saturated part (10+ bursts). Modelled as start-up + bytes / bandwidth,
    which slightly over-charges mid-sized writes (the table's flat region).
    """
    rows = np.array(measured_core.L0C_TO_GM_910B1)
    one = measured_core.L0C_TO_GM_BURST_BYTES / (rows[0, 1] * 1e9)
    peak = float(np.median(rows[rows[:, 0] >= 10, 1])) * 1e9
    return MoverFit(startup_s=one - measured_core.L0C_TO_GM_BURST_BYTES / peak, bytes_per_s=peak)


LINE_BYTES = 512  # L2 cache line (reference: alignment section)
L2_USABLE_FRACTION = 0.75  # assumed: set conflicts and other tenants keep L2 from full use


@dataclass(frozen=True)
class StreamCosts:
    """One core's GM->L1 streaming: a cost per contiguous run and per 512 B line it touches.

    A tile load is a set of contiguous runs (one per ND row, one per zN
    panel). Each run pays ``run_s`` (its descriptor and nd2nz row set-up) and
    ``line_s`` for every cache line it touches, so runs that start or end
    inside a line, or are short, move fewer bytes per second.
    """

    run_l2_s: float  # a run whose lines hit L2
    run_hbm_s: float  # a run whose lines come from HBM
    line_l2_s: float  # a line that hits L2
    line_hbm_s: float  # a line that misses L2 and comes from HBM
    partial_s: float  # a run that ends inside a line (a partial-line request)
    misaligned_s: float  # a run that starts inside a line (rows not 512 B apart)
    peak_bytes_per_s: float  # the mover's ceiling (256 B/cycle)

    def seconds(
        self, nbytes: np.ndarray, run_bytes: np.ndarray, stride_bytes: np.ndarray,
        miss: np.ndarray,
    ) -> np.ndarray:
        """Seconds to stream ``nbytes`` in runs of ``run_bytes``, ``miss`` of them from HBM."""
        runs = nbytes / np.maximum(run_bytes, 1.0)
        lines = runs * lines_per_run(run_bytes, stride_bytes)
        run_s = self.run_l2_s + miss * (self.run_hbm_s - self.run_l2_s)
        line_s = self.line_l2_s + miss * (self.line_hbm_s - self.line_l2_s)
        partial = np.mod(run_bytes, LINE_BYTES) != 0
        run_s = (run_s + np.where(partial, self.partial_s, 0.0)
                 + misaligned_fraction(stride_bytes) * self.misaligned_s)
        return np.maximum(runs * run_s + lines * line_s, nbytes / self.peak_bytes_per_s)


def misaligned_fraction(stride_bytes: np.ndarray) -> np.ndarray:
    """Share of runs ``stride`` apart that start inside a 512 B line (0 when aligned)."""
    g = np.gcd(np.asarray(stride_bytes, dtype=np.int64), LINE_BYTES).astype(float)
    return 1.0 - np.maximum(g, 1.0) / LINE_BYTES


def lines_per_run(run_bytes: np.ndarray, stride_bytes: np.ndarray) -> np.ndarray:
    """Mean 512 B lines a run of ``run_bytes`` touches when runs start ``stride`` apart.

    Run starts fall on multiples of ``g = gcd(stride, 512)`` (the matrix base is
    line aligned); a run whose start sits ``o`` bytes into a line touches
    ``ceil((o + run) / 512)`` lines, averaged over the ``512 / g`` offsets.
    """
    run = np.maximum(np.asarray(run_bytes, dtype=float), 1.0)
    g = np.gcd(np.asarray(stride_bytes, dtype=np.int64), LINE_BYTES).astype(float)
    g = np.maximum(g, 1.0)
    offsets = LINE_BYTES / g
    whole = np.floor(run / LINE_BYTES)
    rest = run - whole * LINE_BYTES
    # rest == 0: one more line unless the run starts on a line (1 offset in n)
    straddle_aligned = (offsets - 1.0) / offsets
    spill = (offsets - np.floor((LINE_BYTES - rest) / g) - 1.0) / offsets
    return whole + np.where(rest > 0, 1.0 + np.maximum(spill, 0.0), straddle_aligned)


# Fitted to the published 910B kernel timings by scripts/calibrate_simulator.py
# (docs/SIMULATOR.md, "Calibration"), least squares on log time with HBM fixed
# at the profile's figure. An L2 line streams near the mover's peak; an HBM
# line takes about 5 ns per core (about 100 GB/s for long runs); every run
# pays a set-up, a little more when it ends inside a line and much more when
# it starts inside one (a row stride that is not a multiple of 512 B).
STREAM_RUN_L2_S = 1.43e-9
STREAM_RUN_HBM_S = 1.11e-9
STREAM_LINE_L2_S = 0.729e-9
STREAM_LINE_HBM_S = 4.73e-9
STREAM_PARTIAL_S = 1.15e-9
STREAM_MISALIGNED_S = 7.92e-9


def gm_stream(peak_bytes_per_cycle: float, clock_hz: float) -> StreamCosts:
    """GM->L1 streaming costs of one core."""
    return StreamCosts(STREAM_RUN_L2_S, STREAM_RUN_HBM_S, STREAM_LINE_L2_S, STREAM_LINE_HBM_S,
                       STREAM_PARTIAL_S, STREAM_MISALIGNED_S, peak_bytes_per_cycle * clock_hz)
