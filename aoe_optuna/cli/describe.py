"""What a spec's space looks like: size, feasible set, baseline, and the optimum.

Used by ``aoe-tune describe``; the optimum is
exhaustive (every feasible config evaluated, noise-free, by the vectorised
simulator), so it is the true optimum of the model, not an estimate.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from aoe_optuna.spec.loader import load_spec


def describe_spec(path: str, optimum: bool = True) -> Iterator[str]:
    spec = load_spec(path)
    space = spec.space
    yield f"{path}: {spec.default_study_name()}"
    yield f"  workload         {spec.workload.name}"
    yield f"  space            {space.size:,} configs over {', '.join(space.names)}"
    yield f"  feasible         {space.n_feasible:,} ({space.n_feasible / space.size:.1%})"
    roofline = spec.roofline_tokens_per_s()
    if roofline is None:
        return
    yield f"  roofline         {roofline:,.4g} tokens/s"
    if spec.backend["name"] != "simulator" or not optimum:
        return
    from aoe_optuna.bench.exhaustive import simulator_costs, simulator_exhaustive
    from aoe_optuna.spec.backend import make_backend

    sim = make_backend(spec)
    result = simulator_exhaustive(space, spec.workload, sim)
    best = 1.0 / result.optimum
    if spec.baseline is not None:
        row = space.index(spec.baseline)[None, :]
        base = 1.0 / float(simulator_costs(space, spec.workload, sim, row)[0])
        yield (f"  baseline         {base:,.4g} tokens/s ({base / roofline:.1%} of roofline) "
               f"{_cfg(spec.baseline)}")
    yield (f"  optimum          {best:,.4g} tokens/s ({best / roofline:.1%} of roofline) "
           f"{_cfg(result.best_config)}")
    finite = result.costs[np.isfinite(result.costs)]
    yield (f"  near optimum     {result.count_within(0.01):,} configs within 1%, "
           f"{result.count_within(0.05):,} within 5%; median config "
           f"{1.0 / float(np.median(finite)):,.4g} tokens/s")
    if spec.baseline is not None:
        yield f"  optimum/baseline {best / base:.3f}"


def _cfg(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())
