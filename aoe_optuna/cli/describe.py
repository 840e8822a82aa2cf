"""What a spec's space looks like: size, feasible set, baseline, and the optimum.

Used by ``aoe-tune describe``; the optimum is
exhaustive (every feasible config evaluated, noise-free, by the vectorised
simulator), so it is the true optimum of the model, not an estimate. A space
with catlass's knobs is also compared with the seed space's optimum and with
catlass's default kernel, and each GEMM's own best kernel is shown: what a
per-operator tuning would pick.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from aoe_optuna.space.params import to_code
from aoe_optuna.space.presets import CATLASS_DEFAULT, CATLASS_PARAMS, seed_params
from aoe_optuna.spec.loader import StudySpec, load_spec
from aoe_optuna.workload.step_split import describe_split, step_split


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
    yield ("  step             "
           + describe_split(step_split(spec.workload, spec.profile)) + "; GEMMs at roofline")
    if spec.workload.layer_ops:
        kinds = sorted({call.kind for call in spec.workload.layer_ops})
        yield (f"  tuned operators  {', '.join(kinds)}: charged as the library's default "
               "kernels here; `aoe-tune operators` tunes each in a study of its own")
        yield from _operator_bands(spec)
    if not spec.exact_model or not optimum:
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
    yield from _bands(spec, best)
    if any(name in CATLASS_PARAMS for name in space.names):
        yield from _against_catlass(spec, sim, best)


def _against_catlass(spec: StudySpec, sim: object, best: float) -> Iterator[str]:
    """The optimum against the seed space's and catlass's default; each GEMM's best kernel."""
    from aoe_optuna.bench.exhaustive import best_per_gemm, simulator_exhaustive
    from aoe_optuna.hardware.capacity import hardware_rules
    from aoe_optuna.space.search_space import SearchSpace

    seed = SearchSpace(seed_params(), hardware_rules(spec.profile, spec.workload.dtype))
    seed_best = 1.0 / simulator_exhaustive(seed, spec.workload, sim).optimum
    yield (f"  seed space       optimum {seed_best:,.4g} tokens/s; this space's optimum is "
           f"{best / seed_best:.3f}x")
    default = {**space_defaults(spec), **CATLASS_DEFAULT}
    cols = {k: np.array([to_code(k, v)]) for k, v in default.items()}
    step = spec.workload.fixed_s + sum(
        g.count * float(sim.latency(cols, g)[0]) for g in spec.workload.gemms)  # type: ignore[attr-defined]
    catlass = spec.workload.tokens_per_step / step
    yield (f"  catlass default  {catlass:,.4g} tokens/s (L1 128x256x256, L0 K 64, swizzle <3,0>, "
           f"pingpong); this space's optimum is {best / catlass:.3f}x")
    yield "  per GEMM         the fastest kernel for each shape alone:"
    for name, (seconds, config) in best_per_gemm(spec.space, spec.workload, sim).items():
        gemm = next(g for g in spec.workload.gemms if g.name == name)
        batch = f" batch {gemm.batch}" if gemm.batch > 1 else ""
        yield (f"    {name:<10} {gemm.M}x{gemm.K}x{gemm.N}{batch}  {seconds * 1e6:,.1f} us  "
               f"{_variant(config)}")


def _operator_bands(spec: StudySpec) -> Iterator[str]:
    """The held-out band of each kind of tuned operator the step charges; the kinds no
    held-out figure checks are named together, with no number."""
    from aoe_optuna.calibration.band_kinds import layer_kind
    from aoe_optuna.calibration.bands import band_for, label
    from aoe_optuna.calibration.workload_band import problem_op

    kinds = sorted({layer_kind(problem_op(call.problem)) for call in spec.workload.layer_ops})
    bands = {k: band_for(k, spec.profile) for k in kinds}
    unchecked = [label(k) for k in kinds if not bands[k].checked]
    for kind in kinds:
        if bands[kind].checked:
            yield f"  band             {label(kind)}: {bands[kind].text()}"
    if unchecked:
        yield f"  band             unchecked (no held-out figures): {', '.join(unchecked)}"


def _bands(spec: StudySpec, best: float) -> Iterator[str]:
    """How far the simulated figures above may be off: the held-out band of the GEMM
    model (a calibrated chip's own where it fitted every GEMM family), the tokens/s band
    it implies on this step, and a calibrated chip's fit, family by family."""
    from aoe_optuna.calibration.band_kinds import GEMM_TILED
    from aoe_optuna.calibration.bands import band_for
    from aoe_optuna.calibration.workload_band import tokens_band

    band = tokens_band(spec.workload, spec.profile, best)
    yield f"  band             tokens/s {band.text()}"
    yield (f"  GEMM band        {band_for(GEMM_TILED, spec.profile).text()} "
           "(docs/SIMULATOR.md, error bands)")
    chip = spec.profile.calibration
    if chip is not None:
        yield f"  calibrated chip  {spec.profile.path} (from {chip.base}):"
        for name, fit in chip.families.items():
            loo = fit.report.get("leave_one_out") or {}
            kernels = loo.get("kernels", loo.get("rows"))  # "rows" in profiles before
            held = (f"; leave-one-out median error {loo['median']:.1%} on {kernels} kernels"
                    if "median" in loo and kernels is not None else "")
            stated = fit.report.get("stated") or {}
            band = (f"; stated ±{stated['median']:.1%} median, ±{stated['high']:.1%} "
                    f"{stated.get('high_is', '')}" if "high" in stated else "")
            kept = "shipped constants kept (refused)" if "refused" in fit.report else (
                f"scale {fit.scale:.4f}, launch overhead {fit.launch_us:+.2f} us")
            yield f"    {name:<20} {kept}{held}{band}"


def space_defaults(spec: StudySpec) -> dict:
    """Values of the space's own parameters a comparison keeps: the baseline's, or the first
    choice, so a fixed operand layout stays what the study stores."""
    first = {p.name: p.choices[0] for p in spec.space.params}
    return {**spec.space.fixed, **first, **(spec.baseline or {})}


def _variant(config: dict) -> str:
    kernel = "split-K x{}".format(config["split_k"]) if config.get("split_k", 1) > 1 else "basic"
    policy = "preload" if config.get("preload") else "pingpong"
    tiles = (f"L1 {config.get('tile_m')}x{config.get('tile_n')}x{config.get('l1_k', '-')} "
             f"L0 K {config.get('tile_k')}")
    swizzle = f"swizzle <{config.get('swizzle_offset', 3)},{config.get('swizzle_direction', 0)}>"
    rest = " ".join(f"{k}={v}" for k, v in config.items()
                    if k in ("unit_flag", "padding", "layout_a", "layout_b"))
    return f"{kernel}, {policy}, {tiles}, {swizzle} {rest}".rstrip()


def _cfg(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())
