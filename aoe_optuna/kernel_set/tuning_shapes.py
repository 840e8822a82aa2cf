"""Which values of M a kernel set's measurements are taken at.

The joint model predicts every M of the mix from measurements at a few; these are
the ends of the mix (a range's edges are where a model would otherwise extrapolate)
and the quantiles of the mix's time in between: each M's weight times the time one
run of it is expected to take (:mod:`.expected_time`), so the M where a step spends
its time get more of them. That is what the weighted latency sums: a batch of 256
costs twice a batch of 1, and a prompt of 8,192 tokens 60 times one of 128, at the
same share of the steps. Quantiles of a mix with heavy points repeat one value; the
rest then split the widest gaps in log M. Every other M of the mix is one the
measurements never saw, which is what the held-out figures of
docs/benchmarks/kernel_sets.md are taken on.
"""

from __future__ import annotations

import numpy as np

DEFAULT_COUNT = 16


def tuning_shapes(m: np.ndarray, weight: np.ndarray, count: int = DEFAULT_COUNT,
                  time_s: np.ndarray | None = None) -> np.ndarray:
    """Up to ``count`` distinct values of ``m`` (ascending, as given) to measure at, by
    quantiles of ``weight`` x ``time_s`` (the weight alone without a time)."""
    m = np.asarray(m, dtype=np.int64)
    if time_s is not None:
        weight = np.asarray(weight, dtype=float) * np.asarray(time_s, dtype=float)
    if count < 1:
        raise ValueError(f"count: expected at least 1 shape, got {count}")
    if len(m) <= count:
        return m.copy()
    if count == 1:  # the median of the time
        cum = np.cumsum(weight) / np.sum(weight)
        return m[[int(np.searchsorted(cum, 0.5))]]
    picks = {int(m[0]), int(m[-1])}
    cum = np.cumsum(weight) / np.sum(weight)
    inner = count - 2
    for i in range(inner):
        pos = min(int(np.searchsorted(cum, (i + 0.5) / inner)), len(m) - 1)
        picks.add(int(m[pos]))
    logs = np.log2(m.astype(float))
    while len(picks) < count:
        chosen = np.array(sorted(picks))
        gaps = np.diff(np.log2(chosen.astype(float)))
        filled = False
        for g in np.argsort(-gaps, kind="stable"):
            lo, hi = chosen[g], chosen[g + 1]
            inside = (m > lo) & (m < hi)
            if inside.any():
                mid = (np.log2(float(lo)) + np.log2(float(hi))) / 2
                cand = m[inside]
                picks.add(int(cand[np.argmin(np.abs(logs[inside] - mid))]))
                filled = True
                break
        if not filled:
            break
    return np.array(sorted(picks), dtype=np.int64)
