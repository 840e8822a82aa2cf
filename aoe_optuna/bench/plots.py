"""Convergence plots: best/opt against measurements, median and inter-quartile band per sampler.

The dashed black line is the exact expected best of random sampling without
replacement (the performance score's baseline), so a curve below it beats random.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aoe_optuna.bench import metrics
from aoe_optuna.bench.exhaustive import Exhaustive
from aoe_optuna.bench.seed_run import RunResult


def convergence_plot(case: str, runs: Sequence[RunResult], exhaustive: Exhaustive,
                     path: Path, title: str | None = None) -> Path:
    """Write one PNG for ``case``: one line per sampler, measurements on x, best/opt on y."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    opt = exhaustive.optimum
    by_sampler: dict[str, list[RunResult]] = {}
    for r in runs:
        if r.case == case:
            by_sampler.setdefault(r.sampler, []).append(r)
    top = max(r.budget for rs in by_sampler.values() for r in rs)
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=110)
    worst = 1.05
    for sampler, group in sorted(by_sampler.items()):
        budget = max(r.budget for r in group)
        curves = np.array([metrics.ratio_curve(r.costs, opt, budget, r.true_costs) for r in group])
        x = np.arange(1, budget + 1)
        with np.errstate(invalid="ignore"):  # inf = nothing found yet
            med = np.median(curves, axis=0)
            q1, q3 = np.percentile(curves, [25, 75], axis=0)
        (line,) = ax.plot(x, med, lw=1.8, label=f"{sampler} ({len(group)} seeds)")
        ax.fill_between(x, q1, q3, color=line.get_color(), alpha=0.18, lw=0)
        finite = q3[np.isfinite(q3)]
        if finite.size:
            worst = max(worst, float(finite[min(4, finite.size - 1)]))
    xs = np.unique(np.linspace(1, top, min(top, 60)).astype(int))
    base = metrics.expected_best_random(exhaustive.costs, list(xs)) / opt
    ax.plot(xs, base, "k--", lw=1.2, label="random sampling (exact expectation)")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhline(1.05, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("measurements")
    ax.set_ylabel("best / optimum (time ratio, lower is better)")
    ax.set_ylim(0.99, min(worst, 3.0))
    ax.set_xlim(1, top)
    ax.set_title(title or f"{case}: median and inter-quartile range over seeds")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
