"""Summaries of raw benchmark runs, and the markdown tables a person reads.

All ratios are best-found cost / optimal cost (cost = 1 / value: time per
token or per kernel run), so 1.000 is the optimum and larger is worse; for a
throughput study this equals optimal throughput / best throughput found.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from aoe_optuna.bench import metrics
from aoe_optuna.bench.exhaustive import Exhaustive
from aoe_optuna.bench.seed_run import RunResult


def summarise(runs: Sequence[RunResult], exhaustive: Exhaustive,
              budgets: Sequence[int]) -> dict[str, Any]:
    """One sampler on one case: every metric at every budget (see :mod:`.metrics`)."""
    opt = exhaustive.optimum
    top = max(budgets)
    curves = np.array([metrics.ratio_curve(r.costs, opt, top, r.true_costs) for r in runs])
    baseline = metrics.expected_best_random(exhaustive.costs, list(budgets))
    per_budget = {}
    for b, base in zip(budgets, baseline, strict=True):
        ratios = curves[:, b - 1]
        found = ratios * opt
        entry = metrics.budget_summary(ratios)
        entry["score"] = float(np.mean(metrics.performance_score(found, base, opt)))
        entry["random_baseline"] = float(base / opt)
        per_budget[str(b)] = entry
    measured = sum(len(r.costs) for r in runs)
    suggestions = [s for r in runs for s in r.sampler_s]
    return {
        "seeds": len(runs),
        "budgets": per_budget,
        "reach_95": metrics.median_reach(
            [metrics.measurements_to_reach(r.costs, opt, 0.95, r.true_costs) for r in runs]),
        "reach_99": metrics.median_reach(
            [metrics.measurements_to_reach(r.costs, opt, 0.99, r.true_costs) for r in runs]),
        "invalid_per_valid": metrics.invalid_per_valid(sum(r.n_infeasible for r in runs),
                                                       measured),
        "repeats_per_run": float(np.mean([r.n_duplicates for r in runs])),
        "failed_per_run": float(np.mean([int(np.isnan(r.costs).sum()) for r in runs])),
        "sampler_s_per_suggestion": float(np.mean(suggestions)) if suggestions else float("nan"),
        "runs_stopped_early": sum(r.stopped != "budget" for r in runs),
        "wall_s": float(sum(r.wall_s for r in runs)),
    }


def summarise_all(runs: Sequence[RunResult], exhaustive: dict[str, Exhaustive],
                  budgets: Sequence[int]) -> dict[str, dict[str, Any]]:
    """case -> sampler -> summary, budgets past a run's own budget dropped."""
    groups: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for r in runs:
        groups[(r.case, r.sampler)].append(r)
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for (case, sampler), group in sorted(groups.items()):
        budget = max(r.budget for r in group)
        own = [b for b in budgets if b <= budget] or [budget]
        out[case][sampler] = summarise(group, exhaustive[case], own)
    return dict(out)


def _reach(x: float, top: int) -> str:
    return f">{top}" if not np.isfinite(x) else f"{x:.0f}"


def markdown(summary: dict[str, dict[str, Any]], exhaustive: dict[str, Exhaustive],
             budgets: Sequence[int], infeasible_cap: str) -> str:
    """Two tables per case: quality per budget, and cost of search."""
    lines: list[str] = []
    for case, samplers in summary.items():
        ex = exhaustive[case]
        lines += [
            f"### {case}",
            "",
            f"{ex.n_feasible:,} feasible configs ({ex.n_failed:,} fail when measured), optimum "
            f"cost {ex.optimum:.6g} s; {ex.count_within(0.01)} configs within 1 %, "
            f"{ex.count_within(0.05)} within 5 %. Infeasible proposals per run capped at "
            f"{infeasible_cap}.",
            "",
            "best/opt = best cost found / optimal cost (time ratio, >= 1, lower is better); "
            "score: Willemsen et al. (FGCS 2024), 0 = random sampling, 1 = optimum.",
            "",
            "| sampler | budget | seeds | median best/opt | mean best/opt | P(within 1%) "
            "| P(within 5%) | score | random baseline |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for sampler, s in samplers.items():
            for b, e in s["budgets"].items():
                lines.append(
                    f"| {sampler} | {b} | {s['seeds']} | {e['median']:.3f} | {e['mean']:.3f} | "
                    f"{e['p_within_1']:.2f} | {e['p_within_5']:.2f} | {e['score']:.2f} | "
                    f"{e['random_baseline']:.3f} |"
                )
        lines += [
            "",
            "| sampler | measurements to 95% (median) | to 99% | infeasible per valid "
            "| failed per run | repeats per run | sampler s per suggestion | runs stopped early |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for sampler, s in samplers.items():
            top = max(int(b) for b in s["budgets"])
            lines.append(
                f"| {sampler} | {_reach(s['reach_95'], top)} | {_reach(s['reach_99'], top)} | "
                f"{s['invalid_per_valid']:.1f} | {s['failed_per_run']:.1f} | "
                f"{s['repeats_per_run']:.1f} | {s['sampler_s_per_suggestion']:.4f} | "
                f"{s['runs_stopped_early']} |"
            )
        lines.append("")
    return "\n".join(lines)
