"""What an operator-tuning run leaves: a per-shape table, knowledge base entries,
each shape's kernel, and the same table as the parent study's dashboard note."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import optuna
from optuna.trial import TrialState
from rich import box
from rich.console import Console
from rich.table import Table

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.attrs import ATTR_BASELINE
from aoe_optuna.backends.npu.backend import BATCHED_REFUSAL
from aoe_optuna.calibration.bands import label
from aoe_optuna.export.catlass_header import write_catlass_header
from aoe_optuna.export.destinations import check_figures
from aoe_optuna.export.from_study import possible_layouts
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_band import band_field
from aoe_optuna.export.kb_entry import make_entry, make_layer_entry
from aoe_optuna.export.kb_figure import CALL_UNIT, SHAPE_UNIT
from aoe_optuna.export.kb_store import update_knowledge_base
from aoe_optuna.export.kernel_source import ExportError, ExportInfo, export_kernel
from aoe_optuna.hardware.profile import SocProfile, load_profile
from aoe_optuna.operators.kinds.registry import GEMM
from aoe_optuna.operators.layer_ops import LayerOperator, layer_operators
from aoe_optuna.operators.shape_bands import result_band, shape_band
from aoe_optuna.operators.shapes import operator_shapes
from aoe_optuna.operators.state import best_measured, trial_latency
from aoe_optuna.operators.tuner import OperatorResult
from aoe_optuna.operators.units import LAYER_OP_ATTR
from aoe_optuna.space.params import default_config
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.study.report import dashboard_writers
from aoe_optuna.study.report.text_fit import wrap_items
from aoe_optuna.workload.step_split import describe_fractions

OBJECTIVE = SHAPE_UNIT  # a shape's own figure in the knowledge base (higher is better)


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e6:,.2f}"


def _relative_half_width(interval: tuple[float, float]) -> str:
    """The 95% interval as ``+-x%`` of the mean: it is symmetric in log latency (timing
    noise is multiplicative), so mean x/ (1 + x) covers it."""
    lo, hi = interval
    return "-" if lo == hi else f"±{math.sqrt(hi / lo) - 1:.1%}"


def rows(result: OperatorResult) -> list[list[str]]:
    out = []
    for r in result.shapes:
        speedup = "-" if r.baseline_s is None or r.params is None else (
            f"{r.baseline_s / r.latency_s:.3f}")
        if r.params is not None and r.library_kept:
            speedup = LIBRARY_KEPT
        out.append([
            r.shape.label, r.shape.dims, str(r.shape.weight),
            f"{r.measured}+{r.retimed}",
            _us(r.latency_s), _relative_half_width(r.interval_s),
            "-" if math.isnan(r.tflops) else f"{r.tflops:.2f}", f"{r.roofline_fraction:.1%}",
            _us(r.baseline_s), speedup,
        ])
    return out


LIBRARY_KEPT = "library"  # the speedup cell of an operator whose library kernel is kept


def library_kept_lines(result: OperatorResult) -> list[str]:
    """One line per operator whose library default kernel is faster than its tuned
    winner: the run keeps the library's, and says by how much."""
    return [f"library default kept: {r.shape.label} {r.shape.dims}: the library kernel's "
            f"{_us(r.library_s)} us beats the tuned {_us(r.latency_s)} us; no tuned "
            f"kernel shipped, the step charges the library's"
            for r in result.shapes if r.params is not None and r.library_kept]


# Shapes are written MxNxK everywhere (catlass's GemmCoord order, and the order of the
# shapes' study names <study>/<op>/<MxNxK>); the knowledge base's lines too.
HEADER = ["op", "MxNxK", "runs", "measured", "latency\nus", "95%", "TFLOPS",
          "roofline", "baseline\nus", "speedup"]  # two-line headers: no wider than their values


def headers(result: OperatorResult) -> list[str]:
    """HEADER; its shape column is "shape" where attention or vector kernels share it."""
    if all(r.shape.operator_kind is GEMM for r in result.shapes):
        return HEADER
    return ["shape" if h == "MxNxK" else h for h in HEADER]


def break_at_separators(text: str, width: int, separators: str = "x-") -> str:
    """``text`` in lines of at most ``width``, broken after an ``x`` or ``-`` (a shape's
    separators: ``1x4608x`` / ``3584``, ``b1-q28-kv4-`` / ``d128-s1024``); a piece longer
    than ``width`` alone is left to the table to fold."""
    pieces, piece = [], ""
    for ch in text:
        piece += ch
        if ch in separators:
            pieces.append(piece)
            piece = ""
    if piece:
        pieces.append(piece)
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(lines)


def _widths(header: list[str], table_rows: list[list[str]]) -> list[int]:
    return [max([len(part) for part in h.split("\n")] + [len(r[i]) for r in table_rows])
            for i, h in enumerate(header)]


def print_result(result: OperatorResult, console: Console | None = None) -> None:
    """The per-shape table, readable on a 100-column terminal: no vertical rules, one
    space between columns. Where the shapes do not fit beside the op names (80 columns),
    each shape goes under its op name, broken after a separator, never inside a number."""
    console = console or Console()
    title = (f"operator study {result.parent}: {len(result.shapes)} operators, "
             f"{result.used} measurements")
    for piece in wrap_items(title.split(" "), console.width, sep=" "):  # between words
        console.print(piece, soft_wrap=True, markup=False, highlight=False)
    table = Table(box=box.SIMPLE_HEAD, padding=0, show_edge=False, pad_edge=False)
    header = headers(result)
    table_rows = rows(result)
    widths = _widths(header, table_rows)
    if console.width - (sum(widths) + len(header) - 1) < 0:  # the shape under the op
        first = max(widths[0], console.width - (sum(widths[2:]) + len(header) - 2))
        header = [f"{header[0]}\n {header[1]}", *header[2:]]
        table_rows = [[r[0] + "".join(f"\n {line}" for line in
                                      break_at_separators(r[1], first - 1).split("\n")),
                       *r[2:]] for r in table_rows]
    for i, h in enumerate(header):
        left = i == 0 or h in ("MxNxK", "shape")
        table.add_column(h, justify="left" if left else "right",
                         overflow="fold" if left else "ellipsis", no_wrap=not left)
    for row in table_rows:
        table.add_row(*row)
    console.print(table)
    for line in end_to_end_lines(result):  # broken between words, as the run summary is
        for piece in wrap_items(line.split(" "), console.width, sep=" "):
            console.print(piece, soft_wrap=True, markup=False, highlight=False)
    if result.time_split:  # where the wall-clock went, as the run summary's time: line
        for piece in wrap_items(result.time_split, console.width, first="time: "):
            console.print(piece, soft_wrap=True, markup=False, highlight=False)


def end_to_end_lines(result: OperatorResult) -> list[str]:
    missing = [r.shape for r in result.shapes if r.params is None]
    if missing:
        return [f"end to end: {len(missing)} of {len(result.shapes)} shapes have no successful "
                f"measurement yet ({', '.join(s.label + ' ' + s.dims for s in missing[:3])}"
                f"{', ...' if len(missing) > 3 else ''}); resume with a larger --n-trials"]
    out = library_kept_lines(result)
    out += [f"end to end with each shape's winner: {result.tokens_per_s:.2f} tokens/s "
           f"({result.tokens_per_s / result.roofline_tokens_per_s:.1%} of the roofline "
           f"{result.roofline_tokens_per_s:.2f})"]
    if result.split:
        out.append(f"step split: {describe_fractions(result.split)}")
    if result.baseline_tokens_per_s:
        ratio = result.tokens_per_s / result.baseline_tokens_per_s
        out.append(f"baseline config on every shape: {result.baseline_tokens_per_s:.2f} "
                   f"tokens/s; per-shape winners {ratio:.3f}x")
    if result.simulated:
        out += band_lines(result)
    return out


def band_lines(result: OperatorResult) -> list[str]:
    """A simulated run's bands under its table: one line per kind of operator in it (a
    band belongs to a model, not a row), the unchecked kinds named together, and the
    band of the tokens/s above."""
    bands = {b.kind: b for b in (shape_band(r) for r in result.shapes)}
    out = [f"band, {label(k)}: {b.text()}" for k, b in bands.items() if b.checked]
    unchecked = [label(k) for k, b in bands.items() if not b.checked]
    if unchecked:
        out.append(f"band, unchecked (no held-out figures): {', '.join(unchecked)}")
    if result.split:
        out.append(f"band, tokens/s: {result_band(result).text()}")
    return out


def note_markdown(result: OperatorResult) -> str:
    lines = [f"# {result.parent}", "",
             f"{len(result.shapes)} operators, one study each (`{result.parent}/<op>/<dims>`); "
             f"{result.used} measurements, re-timing included.", "",
             "| " + " | ".join(h.replace("\n", " ") for h in headers(result)) + " |",
             "|" + "|".join("---" if i < 2 else "---:" for i in range(len(HEADER))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows(result)]
    lines += ["", *end_to_end_lines(result)]
    if result.time_split:
        lines += ["", f"Time: {', '.join(result.time_split)}."]
    return "\n".join(lines)


def save_note(study: optuna.Study, result: OperatorResult) -> None:
    """The table as the parent study's dashboard note; skipped without the extra."""
    dashboard_note = dashboard_writers.save_note()
    if dashboard_note is None:
        return
    dashboard_note(study, note_markdown(result))


def kb_entries(result: OperatorResult, spec: StudySpec, storage_url: str) -> list[dict]:
    """One entry per tuned operator: a GEMM shape's with its own latency, interval and
    TFLOPS; an attention or vector kernel's with its problem and calls per second."""
    out = []
    simulated = spec.exact_model
    for r in result.shapes:
        if r.params is None:
            continue
        band = band_field(shape_band(r)) if simulated else None
        if r.shape.operator_kind is not GEMM:  # a kind the simulator's model times
            gain = None if r.baseline_s is None else r.baseline_s / r.latency_s - 1.0
            library = r.library_s if r.library_kept else None
            out.append(layer_entry(spec.profile.soc, r.shape, r.params, r.latency_s, gain,
                                   r.study_name, storage_url, band, library_s=library))
            continue
        full = spec.space.full_config(r.params)
        gain = None if r.baseline_s is None else r.baseline_s / r.latency_s - 1.0
        lo, hi = r.interval_s
        out.append(make_entry(
            spec.profile.soc, GEMM.kb_op(spec.op_name, r.shape.batch), r.shape.dtype, r.shape.M,
            r.shape.K, r.shape.N,
            str(full.get("layout", "row_major")), r.params, round(r.tflops, 4), gain,
            r.study_name, storage_url, objective=OBJECTIVE,
            latency_us=round(r.latency_s * 1e6, 4),
            latency_interval_us=(round(lo * 1e6, 4), round(hi * 1e6, 4)), band=band,
        ))
    return out


def layer_entry(soc: str, op: LayerOperator, params: dict, latency_s: float,
                gain: float | None, study: str, storage_url: str,
                band: dict | None = None, library_s: float | None = None) -> dict:
    """An attention or vector kernel's knowledge base entry (``band``: a simulated
    time's held-out error; ``library_s``: the library default kernel's time where it
    beats the tuned one and is kept)."""
    return make_layer_entry(soc, op.operator_kind.part, op.op_name, op.dtype, op.problem_doc(),
                            params, round(1.0 / latency_s, 4), gain, study, storage_url,
                            latency_us=round(latency_s * 1e6, 4), band=band,
                            library_kept_us=None if library_s is None
                            else round(library_s * 1e6, 4))


def export_layer_study(study: optuna.Study, storage_url: str, kb_path: str | None,
                       header: str | None, output: str | None = None,
                       replace: bool = False) -> Iterator[str]:
    """``aoe-tune export`` of an attention or vector kernel's study: its best tiling into
    the knowledge base (``replace``: over an entry of another figure) and, with
    ``output``, the kernel source the npu backend renders for it (its kind's ``render``)."""
    plan = study.user_attrs[LAYER_OP_ATTR]
    op = LayerOperator.from_plan(plan)
    trials = study.get_trials(deepcopy=False)
    best = best_measured(trials)
    if best is None:
        raise ExportError(f"study {study.study_name!r} has no completed measurement to export")
    base = next((t for t in trials if t.user_attrs.get(ATTR_BASELINE) and t.state ==
                 TrialState.COMPLETE), None)
    latency = trial_latency(best)
    gain = None if base is None else trial_latency(base) / latency - 1.0
    entry = layer_entry(str(plan["soc"]), op, dict(best.params), latency, gain,
                        study.study_name, storage_url)
    if kb_path and not replace:  # refused before anything is written
        check_figures(kb_path, planned=[entry])
    if output is not None:
        info = ExportInfo(study=study.study_name, storage=storage_url, trial=best.number,
                          value=1.0 / latency, objective=CALL_UNIT,
                          baseline=None if base is None else 1.0 / trial_latency(base))
        what = write_layer_kernel(output, op, dict(best.params),
                                  load_profile(str(plan["soc"])), info)
        yield f"wrote {output}: {what}"
    if kb_path:
        merged = update_knowledge_base(
            kb_path, lambda kb: kb.merge(entry, replace=replace).describe(), header)
        yield f"kb {kb_path}: {merged}"
        if header:
            yield f"wrote {header} (GEMM entries only)"


def merge_into_kb(result: OperatorResult, spec: StudySpec, storage_url: str,
                  kb_path: str | Path, replace: bool = False) -> Iterator[str]:
    """Merge each shape's entry. An entry of another figure held for a shape's key (a
    one-config study's tokens/s of the model) is refused, unless ``replace``: the run
    checks that before it measures (:func:`planned_kb_entries`)."""
    entries = kb_entries(result, spec, storage_url)

    def merge(kb: KnowledgeBase) -> list[str]:
        return [kb.merge(entry, replace=replace).describe() for entry in entries]

    for line in update_knowledge_base(kb_path, merge):
        yield f"kb {kb_path}: {line}"


def planned_kb_entries(spec: StudySpec, parent: str) -> list[dict]:
    """The keys :func:`kb_entries` may write for an operator run of ``spec``, each with its
    figure, for :meth:`~aoe_optuna.export.kb.KnowledgeBase.check_comparable` before the
    run measures."""
    soc = spec.profile.soc
    out: list[dict] = [
        {"soc": soc, "op": GEMM.kb_op(spec.op_name, s.batch), "dtype": s.dtype, "M": s.M,
         "K": s.K, "N": s.N, "layout": layout, "objective": SHAPE_UNIT,
         "study": s.study_name(parent)}
        for s in operator_shapes(spec.workload) for layout in possible_layouts(spec.space)]
    out += [{"kind": op.operator_kind.part, "soc": soc, "op": op.op_name, "dtype": op.dtype,
             "problem": op.problem_doc(), "objective": CALL_UNIT, "study": op.study_name(parent)}
            for op in layer_operators(spec.workload)]
    return out


@dataclass
class KernelExports:
    """What ``--export-dir`` wrote: one line per kernel, and the kernels it could not
    write (their tunings are still in their studies and the knowledge base)."""

    lines: list[str] = field(default_factory=list)
    not_exported: list[str] = field(default_factory=list)  # "<label> <dims>" of each

    def refused(self, label: str, why: str) -> None:
        self.lines.append(f"not exported {label}: {why}")
        self.not_exported.append(label)

    def closing_line(self, total: int) -> str | None:
        """One line naming every kernel not written, or None when all were."""
        if not self.not_exported:
            return None
        return (f"not exported {len(self.not_exported)} of {total} kernels: "
                f"{', '.join(self.not_exported)} (each line above says why)")


def export_kernels(result: OperatorResult, spec: StudySpec, storage_url: str, out_dir: Path,
                   op_source: Path | None) -> KernelExports:
    """Each shape's kernel: a catlass instantiation header where the space is catlass's,
    and a rewritten kernel source when ``op_source`` is given; each attention problem's
    catlass flash-attention header and each vector kernel's Ascend C source. A kernel
    that cannot be written is one line saying why (the tiling rules keep the tunings to
    kernels that exist: what is left is a problem the product has no kernel for)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = KernelExports()
    catlass = "l1_k" in spec.space.names or "swizzle_offset" in spec.space.names
    for r in result.shapes:
        if r.params is None:
            continue
        label = f"{r.shape.label} {r.shape.dims}"
        if r.shape.operator_kind is not GEMM and r.library_kept:
            out.lines.append(f"not written {label}: the library's default kernel is kept "
                             f"({_us(r.library_s)} us against the tuned {_us(r.latency_s)} us)")
            continue
        if r.shape.operator_kind is not GEMM:  # a kind the simulator's model times
            path = out_dir / f"{r.shape.kind}_{r.shape.dims}{r.shape.operator_kind.kernel_suffix}"
            info = ExportInfo(study=r.study_name, storage=storage_url, trial=r.trial,
                              value=1.0 / r.latency_s, objective=CALL_UNIT)
            try:
                what = write_layer_kernel(path, r.shape, r.params, spec.profile, info)
                out.lines.append(f"wrote {path}: {what}")
            except ExportError as exc:
                out.refused(label, str(exc))
            continue
        if r.shape.batch > 1:
            out.refused(label, BATCHED_REFUSAL.format(batch=r.shape.batch))
            continue
        stem = f"{r.shape.label.replace('+', '_')}_{r.shape.dims}"
        info = ExportInfo(study=r.study_name, storage=storage_url, trial=r.trial,
                          value=round(r.tflops, 4), objective=OBJECTIVE)
        try:
            if catlass:
                path = out_dir / f"{stem}.h"
                full = {**default_config(), **spec.space.full_config(r.params)}
                write_catlass_header(path, full, spec.profile, r.shape.dtype, info)
                out.lines.append(f"wrote {path}")
            if op_source is not None:
                path = out_dir / f"{stem}{op_source.suffix}"
                export_kernel(op_source, path, dict(r.params), info=info)
                out.lines.append(f"wrote {path}")
        except ExportError as exc:
            out.refused(label, str(exc))
    return out


def write_layer_kernel(path: str | Path, op: LayerOperator, config: dict, profile: SocProfile,
                       info: ExportInfo | None = None) -> str:
    """Write the kernel ``op``'s kind renders for ``config``; say what it is. A problem the
    kernel cannot run raises a one-line ExportError and writes nothing."""
    text, what = op.operator_kind.render(op.problem, op.dtype, config, profile, info)
    write_atomic(path, text)
    return what
