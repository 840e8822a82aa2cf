"""How a kernel set's measurements are split over the operators of its mix.

Each operator's sets cost the step its share of the time, so an operator's measurements
are worth its share of the time: the budget goes to them in that proportion. But a
small operator still needs enough measurements for its model to rank configs at all
(a decode's qkv_proj, o_proj and lm_head are 7-8% of the step each; led by the gain
of their next pick they got 38-64 of 500 measurements, and the best config measured at
a held-out batch stood 4.6-4.8% above its optimum). So every operator first gets a
floor, half of an even split, and the rest goes by the share of the time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

FLOOR = 0.5  # of an even split, every operator's least share of the budget


def quotas(time_s: Sequence[float], budget: int, floor: float = FLOOR) -> np.ndarray:
    """Each operator's measurements out of ``budget`` (not rounded), given the time
    the mix spends in it per step."""
    t = np.asarray(time_s, dtype=float)
    if len(t) == 0:
        return t
    if not np.all(np.isfinite(t)) or t.sum() <= 0:
        t = np.ones(len(t))
    each = floor * budget / len(t)
    return each + (budget - each * len(t)) * t / t.sum()


def next_operator(measured: Sequence[int], quota: np.ndarray,
                  open_: Sequence[bool]) -> int | None:
    """The open operator furthest below its quota (measured / quota smallest; the first
    on a tie); None when none is open."""
    best, best_ratio = None, np.inf
    for i, (n, q, ok) in enumerate(zip(measured, quota.tolist(), open_, strict=True)):
        ratio = n / q if q > 0 else np.inf
        if ok and ratio < best_ratio:
            best, best_ratio = i, ratio
    return best
