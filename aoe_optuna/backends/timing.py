"""How a kernel is timed: warm-up, then repeats until its time is known well enough.

Policy (used by the cpu driver; the npu host programs follow the same rules with the
median in C++, ``backends/npu/templates/aoe_bench_common.h``, which every host program
includes):

1. ``warmup`` untimed calls (caches, page faults, frequency ramp-up). The npu
   host programs then go on warming up in batches until two consecutive
   batches are :func:`settled` (agree to ``rel_precision``), at most
   :data:`MAX_WARMUP_BATCHES` batches: a device's clocks may take longer to
   settle than a fixed count allows.
2. Timed calls, one sample each, at least ``min_repeats`` of them.
3. Stop as soon as the median is known to ``rel_precision``: the half-width
   of its 95% confidence interval, estimated as
   ``1.96 * 1.2533 * sigma / sqrt(n)`` with the robust
   ``sigma = 1.4826 * MAD`` (1.2533 = sqrt(pi/2), the efficiency of the
   median relative to the mean for normal noise), divided by the median, is
   at most ``rel_precision``; or when ``max_repeats`` samples or
   ``max_seconds`` of timed calls are reached, whichever comes first.
4. Early stop (``stop_above_s`` given: the incumbent's latency for this
   problem): once ``min_repeats`` samples are in, stop as soon as the lower
   end of the median's 95% interval lies above ``stop_above_s`` by more than
   ``stop_margin``: the candidate is clearly slower, and timing it to full
   precision would not change which config wins. The result says it was cut
   short and gives the interval.
5. Report the estimate (below), the median and the spread, the interquartile
   range over the median.

The estimate (:data:`ESTIMATORS`) is the median of the samples, or their minimum over
a window of fixed length. The median: one preempted run must not move the result. The
minimum (the cpu backend's default): on a shared host a call is slowed by other
tenants in spells of tens of milliseconds to a few seconds, and a measurement of a few
consecutive calls lands inside one, so its median is as noisy as the spells (on this
project's 2-core VM a 3.6-7.7 ms kernel's median moved 15-33% from one measurement to the
next, its minimum over a 2 s window 1.3-8.1%; docs/benchmarks/certified_winners.md).
Interference only adds time, so the fastest call of a window long enough to reach
past a spell is the kernel's own cost. With the minimum neither the precision rule
(3.) nor the early stop (4.) ends a timing: it runs ``max_seconds`` (or
``max_repeats`` calls). A shorter part of the window moves as much as a short
timing does (0.5 s: 8-21% on that VM), so a cut on it would drop configs as fast as
the incumbent.

The clock (:data:`CLOCKS`): the wall clock (``perf_counter``), or the calling
thread's CPU time (``thread_time``). For a single-threaded kernel that computes
and never waits, the two agree on a quiet machine; on a loaded one the wall
clock also counts the time the thread waited for a core, the CPU time does not.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Z95 = 1.96
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)  # std error of median / std error of mean
MAD_TO_SIGMA = 1.4826
MAX_WARMUP_BATCHES = 20  # the npu host programs' cap on warm-up batches
ESTIMATORS = ("median", "min")  # what a timing reports (module docstring)


def relative_gap(a: float, b: float) -> float:
    """``|a - b|`` over the smaller of the two (inf unless both are positive)."""
    lo = min(a, b)
    return abs(a - b) / lo if lo > 0 else math.inf


def settled(previous: float, current: float, rel_precision: float) -> bool:
    """Whether two consecutive warm-up batches agree: warm-up is over."""
    return relative_gap(previous, current) <= rel_precision


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = 1
    min_repeats: int = 5
    max_repeats: int = 100
    rel_precision: float = 0.02
    max_seconds: float = 1.0
    stop_above_s: float | None = None  # the incumbent's latency: stop once clearly above it
    stop_margin: float = 0.10
    estimator: str = "median"  # one of ESTIMATORS

    def __post_init__(self) -> None:
        if self.warmup < 0 or self.min_repeats < 1 or self.max_repeats < self.min_repeats:
            raise ValueError(f"inconsistent timing policy {self}")
        if not 0 < self.rel_precision < 1 or self.max_seconds <= 0:
            raise ValueError(f"inconsistent timing policy {self}")
        if (self.stop_above_s is not None and not self.stop_above_s > 0) or self.stop_margin < 0:
            raise ValueError(f"inconsistent timing policy {self}")
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator: expected one of {ESTIMATORS}, got {self.estimator!r}")

    def clearly_slower(self, samples: Sequence[float]) -> bool:
        """Whether the median's 95% interval lies above the incumbent by the margin
        (never with the minimum: its window is the measurement)."""
        if (self.stop_above_s is None or self.estimator == "min"
                or len(samples) < self.min_repeats):
            return False
        low, _high = median_interval(samples)
        return low > self.stop_above_s * (1.0 + self.stop_margin)

    def done(self, samples: Sequence[float], spent_s: float) -> bool:
        """Whether enough is timed: the window is spent, or (the median) it is known to
        ``rel_precision``."""
        if spent_s >= self.max_seconds:
            return True
        return self.estimator == "median" and median_precision(samples) <= self.rel_precision


@dataclass(frozen=True)
class TimingResult:
    median_s: float
    spread: float  # interquartile range / median
    precision: float  # estimated relative half-width of the median's 95% interval
    samples: tuple[float, ...]
    estimate_s: float  # what the timing reports: its policy's estimator of the samples
    cut_short: bool = False  # stopped early: clearly slower than the incumbent

    @property
    def repeats(self) -> int:
        return len(self.samples)


def median_precision(samples: Sequence[float]) -> float:
    """Relative half-width of the 95% interval of the median (inf with < 2 samples)."""
    if len(samples) < 2:
        return math.inf
    x = np.asarray(samples, dtype=float)
    med = float(np.median(x))
    if med <= 0:
        return math.inf
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(x - med)))
    return Z95 * MEDIAN_EFFICIENCY * sigma / math.sqrt(len(x)) / med


def median_interval(samples: Sequence[float]) -> tuple[float, float]:
    """The median's 95% interval (seconds), from :func:`median_precision`."""
    med = float(np.median(np.asarray(samples, dtype=float)))
    half = med * median_precision(samples) if len(samples) >= 2 else math.inf
    return med - half, med + half


def summarize(samples: Sequence[float], cut_short: bool = False,
              estimator: str = "median") -> TimingResult:
    x = np.asarray(samples, dtype=float)
    med = float(np.median(x))
    q1, q3 = np.percentile(x, [25, 75])
    spread = float((q3 - q1) / med) if med > 0 else 0.0
    estimate = float(x.min()) if estimator == "min" else med
    return TimingResult(med, spread, median_precision(samples), tuple(float(s) for s in x),
                        estimate, cut_short)


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter,
                                          "thread_cpu": time.thread_time}


def time_call(fn: Callable[[], object], policy: TimingPolicy = TimingPolicy(),
              clock: str = "wall") -> TimingResult:
    """Time ``fn`` under ``policy`` on ``clock`` (one of :data:`CLOCKS`: the monotonic
    high-resolution wall clock, or this thread's CPU time)."""
    now = CLOCKS[clock]
    for _ in range(policy.warmup):
        fn()
    samples: list[float] = []
    spent = 0.0
    while len(samples) < policy.max_repeats:
        t0 = now()
        fn()
        dt = now() - t0
        samples.append(dt)
        spent += dt
        if len(samples) < policy.min_repeats:
            continue
        if policy.clearly_slower(samples):
            return summarize(samples, True, policy.estimator)
        if policy.done(samples, spent):
            break
    return summarize(samples, False, policy.estimator)
