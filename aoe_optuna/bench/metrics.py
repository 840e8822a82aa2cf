"""Benchmark metrics as pure functions (definitions: ../shared/reference/anchors.md).

Convention: every metric works on *cost* = 1 / value (seconds per token, or
per kernel run for a replayed space), lower is better. ``ratio`` is
best-found cost / optimal cost, so 1.0 is the optimum and 1.07 means the best
config found is 7 % slower: the same "time_best / time_opt" the Kernel Tuner
anchors quote. A failed measurement has cost NaN (it yields nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln


def best_so_far(costs: Sequence[float] | np.ndarray) -> np.ndarray:
    """Running minimum over measurements; ``inf`` until the first success."""
    c = np.asarray(costs, dtype=float)
    return np.minimum.accumulate(np.where(np.isnan(c), np.inf, c)) if c.size else c


def incumbent_costs(costs: Sequence[float] | np.ndarray,
                    true_costs: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """Per measurement, the cost of the best config measured so far.

    With ``true_costs`` (a noisy simulator: its noise-free cost of each measured
    config), the incumbent is still chosen by the measured cost, the one the
    sampler and the user see, but it is scored by its true cost: what the user
    would get by deploying it.
    """
    best = best_so_far(costs)
    if true_costs is None:
        return best
    c = np.where(np.isnan(np.asarray(costs, dtype=float)), np.inf, costs)
    t = np.asarray(true_costs, dtype=float)
    out = np.full(c.shape[0], np.inf)
    k = -1
    for i in range(c.shape[0]):
        if np.isfinite(c[i]) and (k < 0 or c[i] < c[k]):
            k = i
        if k >= 0:
            out[i] = t[k]
    return out


def ratio_curve(costs: Sequence[float] | np.ndarray, optimum: float, budget: int,
                true_costs: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """best/opt after 1..budget measurements; a run that stopped early keeps its last value."""
    best = incumbent_costs(costs, true_costs)[:budget] / optimum
    if best.shape[0] < budget:
        last = best[-1] if best.shape[0] else np.inf
        best = np.concatenate([best, np.full(budget - best.shape[0], last)])
    return best


def budget_summary(ratios: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Over seeds, at one budget: median and mean best/opt, P(within 1 %), P(within 5 %)."""
    r = np.asarray(ratios, dtype=float)
    return {
        "median": float(np.median(r)),
        "mean": float(np.mean(r)),
        "p_within_1": float(np.mean(r <= 1.01)),
        "p_within_5": float(np.mean(r <= 1.05)),
    }


def measurements_to_reach(costs: Sequence[float] | np.ndarray, optimum: float,
                          fraction: float,
                          true_costs: Sequence[float] | np.ndarray | None = None) -> int | None:
    """First measurement (1-based) whose best reaches ``fraction`` of the optimum's value.

    "Reach 99 %" means value >= 0.99 * optimal value, i.e. cost <= optimum / 0.99.
    ``None`` when never reached.
    """
    hit = np.nonzero(incumbent_costs(costs, true_costs) <= optimum / fraction)[0]
    return int(hit[0]) + 1 if hit.size else None


def median_reach(reach: Sequence[int | None]) -> float:
    """Median over seeds, runs that never reached counting as infinitely many."""
    vals = np.array([np.inf if r is None else r for r in reach], dtype=float)
    return float(np.median(vals)) if vals.size else float("nan")


def expected_best_random(costs: np.ndarray, budgets: Sequence[int]) -> np.ndarray:
    """Expected best cost of uniform random sampling *without replacement*, exactly.

    ``costs``: every feasible config's cost (any order; ``inf`` = a failed
    config, counted as a draw that yields the worst finite cost). With the N
    costs sorted ascending, the best of B draws is the i-th smallest with
    probability C(N - i, B - 1) / C(N, B) (the other B - 1 draws come from the
    N - i costlier configs), so E[best] = sum_i c_i C(N - i, B - 1) / C(N, B).
    """
    c = np.sort(np.asarray(costs, dtype=float))
    finite = c[np.isfinite(c)]
    if finite.size == 0:
        raise ValueError("no finite cost in the distribution")
    c = np.where(np.isfinite(c), c, finite.max())
    n = c.shape[0]
    i = np.arange(1, n + 1, dtype=float)
    out = np.empty(len(budgets))
    for k, b in enumerate(budgets):
        if not 1 <= b <= n:
            raise ValueError(f"budget {b} outside 1..{n}")
        rest = n - i
        valid = rest >= b - 1
        logp = np.full(n, -np.inf)
        r = rest[valid]
        logp[valid] = (_log_comb(r, b - 1) - _log_comb(np.float64(n), b))
        out[k] = float(np.sum(c * np.exp(logp)))
    return out


def _log_comb(n: np.ndarray | np.float64, k: int) -> np.ndarray:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def performance_score(found: float | np.ndarray, baseline: float,
                      optimum: float) -> float | np.ndarray:
    """Willemsen et al. (FGCS 2024): (baseline - found) / (baseline - optimum).

    0 = as good as random sampling at that budget, 1 = found the optimum,
    negative = worse than random.
    """
    if baseline <= optimum:
        return np.where(np.asarray(found) <= optimum, 1.0, 0.0) if np.ndim(found) else (
            1.0 if found <= optimum else 0.0
        )
    return (baseline - found) / (baseline - optimum)


def invalid_per_valid(n_infeasible: int, n_measured: int) -> float:
    """Infeasible proposals per measurement (known-constraint violations, never measured)."""
    return n_infeasible / n_measured if n_measured else float("inf")


def paired_comparison(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                      rng: np.random.Generator, n_boot: int = 4000,
                      level: float = 0.90) -> dict[str, float]:
    """Two samplers' best/opt on the same seeds (``a[i]`` and ``b[i]`` share seed i's noise).

    Lower is better. Wins/ties/losses count the seeds where ``a`` is better /
    equal / worse; the sign test's two-sided p ignores ties. The bootstrap
    resamples seeds (pairs kept together) for intervals of the differences of
    the medians and of the means (a - b).
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"paired_comparison: expected two equal, non-empty arrays, got "
                         f"{x.shape} and {y.shape}")
    d = x - y
    wins, losses = int((d < -1e-12).sum()), int((d > 1e-12).sum())
    n = wins + losses
    k = min(wins, losses)
    logp = [gammaln(n + 1) - gammaln(i + 1) - gammaln(n - i + 1) - n * np.log(2)
            for i in range(k + 1)]
    p = min(1.0, 2.0 * float(np.exp(logp).sum())) if n else 1.0
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    med = np.median(x[idx], axis=1) - np.median(y[idx], axis=1)
    mean = d[idx].mean(axis=1)
    lo, hi = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    return {
        "n": int(x.size), "wins": wins, "ties": int(x.size - n), "losses": losses,
        "sign_p": p,
        "median_a": float(np.median(x)), "median_b": float(np.median(y)),
        "mean_a": float(x.mean()), "mean_b": float(y.mean()),
        "median_diff": float(np.median(x) - np.median(y)),
        "median_diff_lo": float(np.percentile(med, lo)),
        "median_diff_hi": float(np.percentile(med, hi)),
        "mean_diff": float(d.mean()),
        "mean_diff_lo": float(np.percentile(mean, lo)),
        "mean_diff_hi": float(np.percentile(mean, hi)),
    }


def effective_noise(costs: Sequence[float] | np.ndarray,
                    true_costs: Sequence[float] | np.ndarray) -> float:
    """Std of log(measured / noise-free cost) over the successful measurements.

    On the simulator each GEMM of a workload draws its own log-normal factor,
    so the noise on a whole workload's cost is smaller than the per-GEMM
    ``noise`` setting; this is the figure to use for the workload.
    """
    c, t = np.asarray(costs, dtype=float), np.asarray(true_costs, dtype=float)
    ok = np.isfinite(c) & np.isfinite(t) & (c > 0) & (t > 0)
    if ok.sum() < 2:
        raise ValueError("effective_noise: expected at least two measured configs")
    return float(np.log(c[ok] / t[ok]).std())


def incumbent_draws(true_costs: Sequence[float] | np.ndarray, sigma: float,
                    rng: np.random.Generator, draws: int = 2000) -> np.ndarray:
    """Noise-free cost of the incumbent when the configs are measured afresh, per draw.

    Each config's measurement is its noise-free cost times exp(N(0, sigma)),
    independently; the incumbent is the one that measures best. Over the
    draws this separates which configs a search measured from the luck of
    one noise draw (the winner's curse): measuring more configs close to the
    optimum raises the expected incumbent, measuring clearly worse ones does
    not. Failed configs (non-finite cost) are never the incumbent.
    """
    t = np.asarray(true_costs, dtype=float)
    t = t[np.isfinite(t)]
    if t.size == 0:
        raise ValueError("incumbent_draws: no successfully measured config")
    if sigma <= 0:
        return np.full(draws, t.min())
    measured = t[None, :] * np.exp(sigma * rng.standard_normal((draws, t.size)))
    return t[np.argmin(measured, axis=1)]


def expected_incumbent(true_costs: Sequence[float] | np.ndarray, sigma: float,
                       rng: np.random.Generator, draws: int = 2000) -> float:
    """Mean of :func:`incumbent_draws`: the incumbent's noise-free cost a search can expect
    from the configs it measured, without the luck of the one noise draw it met."""
    return float(incumbent_draws(true_costs, sigma, rng, draws).mean())
