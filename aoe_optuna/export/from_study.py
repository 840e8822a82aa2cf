"""From a finished study to what inference uses: a tuned kernel source and KB entries.

The kernel is the npu backend's own, rendered by its writer (or, with
``source``, a kernel of the user's with its declarations rewritten); a catlass
study's is a catlass instantiation header.

A model workload tunes one config for all of its GEMMs, so its knowledge base
gets one entry per distinct GEMM shape of the workload, all with that config.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import optuna

from aoe_optuna.export.catlass_header import write_catlass_header
from aoe_optuna.export.kb_entry import make_entry
from aoe_optuna.export.kb_store import update_knowledge_base
from aoe_optuna.export.kernel_source import ExportError, ExportInfo, export_kernel
from aoe_optuna.export.npu_kernel import write_npu_kernel
from aoe_optuna.space.params import default_config
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.study.create import baseline_trial, best_trial


def export_best(
    study: optuna.Study,
    spec: StudySpec,
    storage_url: str,
    source: Path | None,
    output: Path | None,
    kb_path: str | None,
    header: str | None = None,
    catlass_header: Path | None = None,
) -> Iterator[str]:
    """Write the outputs; yield one line per thing written."""
    best = best_trial(study)
    if best is None or best.value is None:
        raise ExportError(f"study {study.study_name!r} has no completed measurement to export")
    base = baseline_trial(study, spec)
    baseline = None if base is None else base.value
    info = ExportInfo(study=study.study_name, storage=storage_url, trial=best.number,
                      value=best.value, baseline=baseline)
    config = dict(best.params)
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
    if kb_path and not spec.backend_space:
        full = spec.space.full_config(config)
        layout = str(full.get("layout", "row_major"))
        shapes: dict[tuple[int, int, int], str] = {}  # each shape once, its first dtype
        for gemm in spec.workload.gemms:
            shapes.setdefault((gemm.M, gemm.K, gemm.N), gemm.dtype)
        band = _simulated_band(spec, float(best.value))
        entries = [make_entry(spec.profile.soc, spec.op_name, dtype, m, k, n, layout, config,
                              float(best.value), info.gain, study.study_name, storage_url,
                              band=band)
                   for (m, k, n), dtype in shapes.items()]
        merged = update_knowledge_base(
            kb_path, lambda kb: [kb.merge(entry).describe() for entry in entries], header)
        for line in merged:
            yield f"kb {kb_path}: {line}"
        if header:
            yield f"wrote {header}"


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
