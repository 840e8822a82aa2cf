"""Data movers of one core: start-up cost plus bytes over bandwidth, per instruction.

Every mover is ``time = startup + bytes / bandwidth`` for one instruction,
with both constants fitted (linear least squares on time vs size) to msKPP's
single-core tables in :mod:`.measured`. The start-up is what makes small
transfers slow: a GM->L1 DataCopy pays about 0.4 us (HBM latency) whatever
its size, so a 4 KiB copy runs at under 10 GB/s and a 1 MiB one near 270.

ND (row/column major) sources are converted to the fractal NZ layout by the
GM->L1 mover itself (nd2nz), whose bandwidth depends on the contiguous width
of each source row: ``bw(w) = peak * w / (w + w0)``, fitted to msKPP's
GM_TO_L1_TRANS table, with a further factor when the row is not a multiple
of 64 B (the table's dips). z_major sources are already fractal: no penalty.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from aoe_optuna.backends.simulator import measured

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
    rows = np.array(measured.GM_TO_L1_910B1)
    return _linear_fit(rows[:, 0] * measured.GM_TO_L1_BURST_BYTES, rows[:, 1])


@cache
def l1_to_l0a() -> MoverFit:
    """L1->L0A LoadData, 512 B per repeat (msKPP L1_TO_L0A_910b1)."""
    rows = np.array(measured.L1_TO_L0A_910B1)
    return _linear_fit(rows[:, 0] * FRACTAL_BYTES, rows[:, 1])


@cache
def l1_to_l0b() -> MoverFit:
    """L1->L0B LoadData, 512 B per repeat (msKPP L1_TO_L0B_910b1)."""
    rows = np.array(measured.L1_TO_L0B_910B1)
    return _linear_fit(rows[:, 0] * FRACTAL_BYTES, rows[:, 1])


@cache
def l0c_to_gm() -> MoverFit:
    """FixPipe L0C->GM: flat time for small writes, then bandwidth-bound.

    Start-up = the time of a one-burst write; bandwidth = the median of the
    saturated part (10+ bursts). Modelled as start-up + bytes / bandwidth,
    which slightly over-charges mid-sized writes (the table's flat region).
    """
    rows = np.array(measured.L0C_TO_GM_910B1)
    one = measured.L0C_TO_GM_BURST_BYTES / (rows[0, 1] * 1e9)
    peak = float(np.median(rows[rows[:, 0] >= 10, 1])) * 1e9
    return MoverFit(startup_s=one - measured.L0C_TO_GM_BURST_BYTES / peak, bytes_per_s=peak)


@dataclass(frozen=True)
class Nd2NzFit:
    """Relative bandwidth of ND->NZ conversion vs the contiguous row width in bytes."""

    peak_gbs: float
    half_width_bytes: float
    unaligned_factor: float  # rows not a multiple of ALIGNED_ROW_BYTES

    def efficiency(self, row_bytes: np.ndarray, plain_gbs: float) -> np.ndarray:
        """Fraction of the plain GM->L1 bandwidth an ND source of these rows gets."""
        eff = self.peak_gbs / plain_gbs * row_bytes / (row_bytes + self.half_width_bytes)
        eff = np.where(row_bytes % ALIGNED_ROW_BYTES == 0, eff, eff * self.unaligned_factor)
        return np.minimum(eff, 1.0)


ALIGNED_ROW_BYTES = 64  # msKPP GM_TO_L1_TRANS peaks at multiples of 32 fp16 elements
ND2NZ_ELEMENT_BYTES = 2  # the table's n counts fp16 elements (our reading)


@cache
def nd2nz() -> Nd2NzFit:
    """Fit ``bw = peak * w / (w + w0)`` on the aligned rows, then the unaligned dip."""
    rows = np.array(measured.GM_TO_L1_ND2NZ_910B1)
    width = rows[:, 0] * ND2NZ_ELEMENT_BYTES
    aligned = width % ALIGNED_ROW_BYTES == 0
    # 1/bw = 1/peak + (w0/peak) * (1/w): linear in 1/w.
    slope, intercept = np.polyfit(1.0 / width[aligned], 1.0 / rows[aligned, 1], 1)
    peak = 1.0 / intercept
    w0 = slope * peak
    fitted = peak * width / (width + w0)
    factor = float(np.median(rows[~aligned, 1] / fitted[~aligned]))
    return Nd2NzFit(peak_gbs=float(peak), half_width_bytes=float(w0), unaligned_factor=factor)
