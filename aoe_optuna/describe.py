"""What a spec's space looks like: size, feasible set, baseline, and the optimum.

Used by ``aoe-tune describe`` and scripts/describe_studies.py; the optimum is
exhaustive (every feasible config evaluated by the vectorised simulator).
"""

from __future__ import annotations

from collections.abc import Iterator

from aoe_optuna.spec import load_spec


def describe_spec(path: str, optimum: bool = True) -> Iterator[str]:
    spec = load_spec(path)
    space = spec.space
    roofline = spec.workload.roofline_tokens_per_s(spec.profile)
    yield f"{path}: {spec.default_study_name()}"
    yield f"  workload       {spec.workload.name}"
    yield f"  space          {space.size:,} configs over {', '.join(space.names)}"
    yield f"  feasible       {space.n_feasible:,} ({space.n_feasible / space.size:.1%})"
    yield f"  roofline       {roofline:,.4g} tokens/s"
    if spec.backend["name"] != "simulator" or not optimum:
        return
    from aoe_optuna.exhaustive import exhaustive_optimum

    result = exhaustive_optimum(spec)
    if spec.baseline is not None:
        base = result.value_of(spec.baseline)
        yield (f"  baseline       {base:,.4g} tokens/s ({base / roofline:.1%} of roofline) "
               f"{_cfg(spec.baseline)}")
    yield (f"  optimum        {result.best_value:,.4g} tokens/s "
           f"({result.best_value / roofline:.1%} of roofline) {_cfg(result.best_config)}")
    if spec.baseline is not None:
        yield f"  optimum/baseline {result.best_value / base:.3f}"


def _cfg(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())
