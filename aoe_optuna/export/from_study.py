"""From a finished study to what inference uses: a tuned kernel source and KB entries.

The kernel is the npu backend's own, rendered by its writer (or, with
``source``, a kernel of the user's with its declarations rewritten); a catlass
study's is a catlass instantiation header.

A model workload tunes one config for all of its GEMMs, so its knowledge base
gets one entry per distinct GEMM shape of the workload, all with that config and
the step's tokens/s. A study of one GEMM (an operator run's shape, a spec with one
GEMM) writes that shape's own figure, TFLOPS, as the operator run does: the two
figures are never compared (:mod:`aoe_optuna.export.kb_figure`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from aoe_optuna.attrs import ATTR_LATENCY_US, ENV_ATTR
from aoe_optuna.export.catlass_header import write_catlass_header
from aoe_optuna.export.destinations import check_figures
from aoe_optuna.export.kb_entry import certified_fields, make_entry
from aoe_optuna.export.kb_figure import SHAPE_UNIT, STEP_UNIT
from aoe_optuna.export.kb_store import update_knowledge_base
from aoe_optuna.export.kernel_source import ExportError, ExportInfo, export_kernel
from aoe_optuna.export.npu_kernel import write_npu_kernel
from aoe_optuna.kb_file import gemm_kb_op
from aoe_optuna.space.params import default_config
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.study.create import baseline_trial, best_trial, measured_results
from aoe_optuna.study.race.outcome import Certified
from aoe_optuna.study.race.run import stored_certified
from aoe_optuna.workload.gemm import Gemm, Workload


def export_best(
    study: optuna.Study,
    spec: StudySpec,
    storage_url: str,
    source: Path | None,
    output: Path | None,
    kb_path: str | None,
    header: str | None = None,
    catlass_header: Path | None = None,
    replace: bool = False,
) -> Iterator[str]:
    """Write the outputs; yield one line per thing written. An entry of another figure
    held for a key is refused before anything is written, unless ``replace``, which
    replaces it."""
    best = best_trial(study)
    if best is None or best.value is None:
        raise ExportError(f"study {study.study_name!r} has no completed measurement to export")
    certified = stored_certified(study, spec.race, spec.timing_noise)
    if certified is not None:
        best = next((t for t in measured_results(study) if t.number == certified.winner),
                    best)
        yield certified_line(certified)
    else:
        yield (f"winner: trial {best.number}, the best single measurement (not certified: "
               "the study holds no race of its present search; run aoe-tune on it again "
               "to race)")
    base = baseline_trial(study, spec)
    baseline = None if base is None else base.value
    value = certified.value if certified is not None else best.value
    info = ExportInfo(study=study.study_name, storage=storage_url, trial=best.number,
                      value=value, baseline=baseline)
    config = dict(best.params)
    entries = (kb_entries(spec, best, info.gain, study.study_name, storage_url,
                          certified, study.user_attrs.get(ENV_ATTR),
                          {t.number: dict(t.params) for t in study.get_trials(deepcopy=False)})
               if kb_path and not spec.backend_space else [])
    if entries and not replace:
        check_figures(kb_path, planned=entries)  # type: ignore[arg-type]
    if source is not None and output is not None:
        result = export_kernel(source, output, config, info=info)
        changed = sum(1 for c in result.changes if c.changed)
        flags = f"; build flags {' '.join(result.build_flags)}" if result.build_flags else ""
        yield f"wrote {output}: {changed} of {len(result.changes)} tunables changed{flags}"
    elif output is not None:
        dtype = _one_dtype(spec, study.study_name, "the npu backend's kernel")
        full = {**default_config(), **spec.space.full_config(config)}
        built = write_npu_kernel(output, full, spec.profile, dtype, info, tuned=config)
        yield (f"wrote {output}: the npu backend's kernel with the best config; build flags "
               f"{' '.join(built) or '(none)'}")
    if catlass_header is not None:
        dtype = _one_dtype(spec, study.study_name, "catlass header")
        full = {**default_config(), **spec.space.full_config(config)}
        args = write_catlass_header(catlass_header, full, spec.profile, dtype, info)
        yield (f"wrote {catlass_header}: catlass {args.variant} kernel, L1 "
               f"{'x'.join(map(str, args.l1))}, L0 {'x'.join(map(str, args.l0))}")
    if entries:
        merged = update_knowledge_base(
            kb_path, lambda kb: [kb.merge(e, replace=replace).describe() for e in entries],
            header)
        for line in merged:
            yield f"kb {kb_path}: {line}"
        if header:
            yield f"wrote {header}"


def certified_line(c: Certified) -> str:
    """What the export says of its winner: the race's verdict, or why there was none."""
    if not c.spent:
        ties = ", ".join(map(str, c.ties)) or "none"
        return (f"winner: trial {c.winner} at {c.value:.6g} ({c.reason}); ties within "
                f"{c.epsilon:.0%}: {ties}")
    return "winner: " + c.describe()


def kb_entries(spec: StudySpec, best: FrozenTrial, gain: float | None, study_name: str,
               storage_url: str, certified: Certified | None = None,
               env: dict[str, str] | None = None,
               params: dict[int, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The study's entries: one per distinct shape with the step's tokens/s, or the one
    GEMM's own TFLOPS and latency. ``certified``: the race's winner (``best``), whose
    value, interval and ties (their configs in ``params``) the entries carry, with the
    environment stamp ``env``."""
    config = dict(best.params)
    layout = str(spec.space.full_config(config).get("layout", "row_major"))
    soc = spec.profile.soc
    value = float(certified.value if certified is not None else best.value or 0.0)
    ties = [params[t] for t in certified.ties if t in params] \
        if certified is not None and params else []
    gemm = one_gemm(spec.workload)
    if gemm is not None:
        per_call = spec.workload.tokens_per_step / gemm.count
        latency_s = (per_call / value if certified is not None
                     else _gemm_latency_s(spec.workload, gemm, best))
        band = _simulated_gemm_band(spec)
        interval = latency_interval = None
        if certified is not None and certified.spent:
            lo, hi = (per_call / v for v in reversed(certified.interval))
            interval = (_sig(gemm.flops / hi / 1e12), _sig(gemm.flops / lo / 1e12))
            latency_interval = (round(lo * 1e6, 4), round(hi * 1e6, 4))
        extra = _certified(certified, interval, ties, env)
        return [make_entry(soc, gemm_kb_op(spec.op_name, gemm.batch), gemm.dtype, gemm.M,
                           gemm.K, gemm.N, layout, config, round(gemm.flops / latency_s / 1e12, 4),
                           gain, study_name, storage_url, objective=SHAPE_UNIT,
                           latency_us=round(latency_s * 1e6, 4),
                           latency_interval_us=latency_interval, band=band, certified=extra)]
    band = _simulated_band(spec, value)
    interval = certified.interval if certified is not None and certified.spent else None
    extra = _certified(certified, interval, ties, env)
    return [make_entry(soc, op, dtype, m, k, n, layout, config, value, gain, study_name,
                       storage_url, band=band, workload=spec.workload.name, certified=extra)
            for op, dtype, m, k, n in _step_shapes(spec)]


def _sig(x: float) -> float:
    """Six significant figures: a CPU kernel's TFLOPS (0.0098) keeps its digits."""
    return float(f"{x:.6g}")


def _certified(certified: Certified | None, interval: tuple[float, float] | None,
               ties: list[dict[str, Any]], env: dict[str, str] | None) -> dict[str, Any]:
    if certified is None:
        return {"env": dict(env)} if env else {}
    return certified_fields(interval, ties, certified.pcs, certified.spent, env or None)


def planned_entries(spec: StudySpec, study_name: str) -> list[dict[str, Any]]:
    """What :func:`kb_entries` will write, before the study measures: each key (for every
    layout the space may pick) with its figure, for
    :meth:`~aoe_optuna.export.kb.KnowledgeBase.check_comparable`."""
    if spec.backend_space:
        return []
    layouts = possible_layouts(spec.space)
    gemm = one_gemm(spec.workload)
    if gemm is not None:
        shapes = [(gemm_kb_op(spec.op_name, gemm.batch), gemm.dtype, gemm.M, gemm.K, gemm.N)]
        figure: dict[str, Any] = {"objective": SHAPE_UNIT}
    else:
        shapes = _step_shapes(spec)
        figure = {"objective": STEP_UNIT, "workload": spec.workload.name}
    return [{"soc": spec.profile.soc, "op": op, "dtype": dtype, "M": m, "K": k, "N": n,
             "layout": layout, "study": study_name, **figure}
            for layout in layouts for op, dtype, m, k, n in shapes]


def possible_layouts(space: SearchSpace) -> list[str]:
    """The entry layouts a config of ``space`` may have: its ``layout``'s choices when
    tuned, else the one it fixes."""
    if "layout" in space.names:
        return [str(v) for v in space.params[space.names.index("layout")].choices]
    return [str(space.fixed.get("layout", "row_major"))]


def one_gemm(workload: Workload) -> Gemm | None:
    """The GEMM of a workload that is one GEMM and nothing else (its value is that GEMM's
    own rows per second, not a step's tokens/s); None for any other workload."""
    if len(workload.gemms) != 1 or workload.layer_ops or workload.fixed_s:
        return None
    return workload.gemms[0]


def _step_shapes(spec: StudySpec) -> list[tuple[str, str, int, int, int]]:
    """(op, dtype, M, K, N) of each distinct GEMM of the workload, its first dtype; a
    batched launch filed as another op."""
    shapes: dict[tuple[str, int, int, int], str] = {}
    for g in spec.workload.gemms:
        shapes.setdefault((gemm_kb_op(spec.op_name, g.batch), g.M, g.K, g.N), g.dtype)
    return [(op, dtype, m, k, n) for (op, m, k, n), dtype in shapes.items()]


def _gemm_latency_s(workload: Workload, gemm: Gemm, trial: FrozenTrial) -> float:
    """One call's latency of the best trial: as measured, or from its rows per second."""
    measured = (trial.user_attrs.get(ATTR_LATENCY_US) or {}).get(gemm.name)
    if measured:
        return float(measured) * 1e-6
    return workload.tokens_per_step / float(trial.value or 0.0) / gemm.count


def _simulated_gemm_band(spec: StudySpec) -> dict | None:
    """The GEMM model's band of a simulated shape (None for measurements), as an
    operator run's shape entry carries."""
    if not spec.exact_model:
        return None
    from aoe_optuna.calibration.band_kinds import GEMM_TILED
    from aoe_optuna.calibration.bands import band_for
    from aoe_optuna.export.kb_band import band_field

    return band_field(band_for(GEMM_TILED, spec.profile))


def _simulated_band(spec: StudySpec, tokens_per_s: float) -> dict | None:
    """The tokens/s band of a simulator study's value (None for measurements)."""
    if not spec.exact_model or tokens_per_s <= 0:
        return None
    from aoe_optuna.calibration.workload_band import tokens_band
    from aoe_optuna.export.kb_band import step_band_field

    return step_band_field(tokens_band(spec.workload, spec.profile, tokens_per_s))


def _one_dtype(spec: StudySpec, study_name: str, what: str) -> str:
    """The workload's one element type: a kernel is built for one."""
    if spec.backend_space:
        raise ExportError(f"study {study_name!r} tunes a backend's own space, not the GEMM "
                          f"tunables a {what} is made of")
    dtypes = sorted({gemm.dtype for gemm in spec.workload.gemms})
    if len(dtypes) != 1:
        raise ExportError(f"{what}: the workload mixes dtypes {dtypes}; one kernel build has "
                          "one element type")
    return dtypes[0]
