"""Read what an npu-backend candidate printed: the host program's result line, what
``msprof op`` wrote, and compiler errors, each turned into a :class:`Measurement`.

* The host program (``templates/main.cpp``) ends with one line
  ``AOE_RESULT {json}``: ``status`` ok / accuracy / runtime / usage, the timed
  samples (seconds per launch) and the correctness check.
* ``msprof op --output=DIR`` (on the device) writes one ``OPPROF_<time>_<id>/``
  directory per profiled launch, each with ``OpBasicInfo.csv``: a header
  ``Op Name,Op Type,Task Duration(us),Block Dim,Mix Block Dim,Device Id,Pid,Current
  Freq,Rated Freq,`` and one row (the format of the files catlass commits under
  examples/04_gemv_aiv/*/prof/, CANN 8.0).
* ``msprof op simulator --output=DIR`` writes no CSV of durations: each
  ``OPPROF_*/simulator/`` holds ``trace.json`` (and one per core below it), a
  Chrome trace (``traceEvents``; complete events ``"ph": "X"`` with ``ts`` and
  ``dur`` in microseconds, one process per pipe); the kernel's duration is the
  span from the first event's start to the last one's end (catlass commits such
  directories under examples/04_gemv_aiv/*/sim_result/).
* A failed build leaves the compiler's ``file:line:col: error: ...`` lines in
  its output; a capacity ``static_assert`` of the kernel names the buffer.

With both an msprof duration and event samples from the same run, the two are
compared; past :data:`AGREEMENT` apart the measurement carries a warning (logged,
and in ``extra["timing_warning"]``).
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aoe_optuna.backends.base import Measurement
from aoe_optuna.backends.timing import relative_gap, summarize

LOG = logging.getLogger(__name__)
RESULT_PREFIX = "AOE_RESULT "
DURATION_COLUMN = "Task Duration(us)"
BASIC_INFO = "OpBasicInfo.csv"
TRACE = "trace.json"
AGREEMENT = 0.05  # event timing and msprof may differ this much before a warning
_ERROR_LINE = re.compile(r"(?:\berror\b|\bError\b|undefined reference|FATAL_ERROR)")
_OVERFLOW = re.compile(r"\b(L0A|L0B|L0C|L1|UB) buffer overflow\b")
ERROR_LINES = 5


class ResultFormatError(ValueError):
    """Output that does not follow the documented format."""


def result_record(stdout: str) -> dict[str, Any]:
    """The JSON of the last ``AOE_RESULT`` line of ``stdout``."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    if not lines:
        raise ResultFormatError("the host program printed no AOE_RESULT line")
    try:
        record = json.loads(lines[-1][len(RESULT_PREFIX):])
    except json.JSONDecodeError as exc:
        raise ResultFormatError(f"unreadable AOE_RESULT line: {exc.msg}") from None
    if not isinstance(record, dict) or "status" not in record:
        raise ResultFormatError("AOE_RESULT line without a status")
    return record


def measurement_from_events(stdout: str, cost_s: float) -> Measurement:
    """The Measurement a host program's output stands for (event-timed latency)."""
    try:
        rec = result_record(stdout)
    except ResultFormatError as exc:
        return Measurement.failure("runtime", str(exc), cost_s)
    status = rec["status"]
    extra = {k: rec[k] for k in ("mode", "soc", "block_dim", "launches", "warmup_batches",
                                 "device", "kernel") if k in rec}
    if status == "runtime":
        return Measurement.failure(
            "runtime", f"{rec.get('call', 'an ACL call')} failed with ACL error "
            f"{rec.get('code', '?')}", cost_s, extra=extra)
    if status == "usage":
        return Measurement.failure("runtime", f"host program refused its arguments: "
                                   f"{rec.get('reason', '')}", cost_s, extra=extra)
    if status == "accuracy":
        bad = rec.get("first_bad", {})
        output = str(rec.get("output", "C"))  # the layer kernels name the output they checked
        where = (f"; first at {output}[{bad['row']}, {bad['col']}]: got {bad['got']:g}, "
                 f"want {bad['want']:g}") if bad else ""
        return Measurement.failure(
            "accuracy", f"{rec.get('bad')} of {rec.get('checked')} checked entries of "
            f"{output} out of tolerance (max abs error "
            f"{rec.get('max_abs_err', float('nan')):g}){where}",
            cost_s, extra=extra)
    if status != "ok":
        return Measurement.failure("runtime", f"host program reported status {status!r}", cost_s)
    samples = [float(s) for s in rec.get("samples_s", [])]
    if not samples or min(samples) <= 0:
        return Measurement.failure("runtime", "host program reported no positive timing",
                                   cost_s, extra=extra)
    timing = summarize(samples)
    return Measurement.success(timing.median_s, cost_s, spread=timing.spread,
                               extra={**extra, "samples": len(samples), "timing": "events",
                                      "precision": timing.precision},
                               samples_s=timing.samples)


def msprof_durations_us(output_dir: Path) -> list[float]:
    """Every ``Task Duration(us)`` of every ``OpBasicInfo.csv`` below ``output_dir``."""
    files = sorted(Path(output_dir).rglob(BASIC_INFO))
    if not files:
        raise ResultFormatError(f"msprof wrote no {BASIC_INFO} under {output_dir}")
    durations: list[float] = []
    for path in files:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            fields = [h.strip() for h in reader.fieldnames or []]
            if DURATION_COLUMN not in fields:
                raise ResultFormatError(f"{path}: no column {DURATION_COLUMN!r} in {fields}")
            for row in reader:
                row = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
                if row.get(DURATION_COLUMN):
                    try:
                        durations.append(float(row[DURATION_COLUMN]))
                    except ValueError:
                        raise ResultFormatError(
                            f"{path}: {DURATION_COLUMN} {row[DURATION_COLUMN]!r} is not a "
                            "number") from None
    if not durations:
        raise ResultFormatError(f"msprof's {BASIC_INFO} under {output_dir} has no rows")
    return durations


def trace_bounds_us(path: Path) -> tuple[float, float] | None:
    """First start and last end of the complete (``"ph": "X"``) events of one Chrome trace."""
    try:
        doc = json.loads(path.read_text(errors="replace"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultFormatError(f"{path}: unreadable trace ({exc})") from None
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise ResultFormatError(f"{path}: no traceEvents list")
    spans = [(float(ev["ts"]), float(ev["ts"]) + float(ev.get("dur", 0.0)))
             for ev in events if isinstance(ev, dict) and ev.get("ph") == "X" and "ts" in ev]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)


def simulator_durations_us(output_dir: Path) -> list[float]:
    """One duration per ``OPPROF_*`` run below ``output_dir``: the span of its simulator traces.

    The per-core traces and the merged one cover the same events, so the span over
    all of them is the kernel's, whichever of them a release writes.
    """
    traces = sorted(Path(output_dir).rglob(TRACE))
    if not traces:
        raise ResultFormatError(f"msprof op simulator wrote no {TRACE} under {output_dir}")
    runs: dict[Path, list[Path]] = {}
    for path in traces:
        run = next((p for p in path.parents if p.name.startswith("OPPROF_")), path.parent)
        runs.setdefault(run, []).append(path)
    durations = []
    for run, paths in sorted(runs.items()):
        bounds = [b for p in paths if (b := trace_bounds_us(p)) is not None]
        if not bounds:
            raise ResultFormatError(f"{run}: the simulator traces hold no complete events")
        durations.append(max(e for _, e in bounds) - min(s for s, _ in bounds))
    return durations


def measurement_from_msprof(output_dir: Path, app_stdout: str, cost_s: float,
                            run_mode: str = "npu") -> Measurement:
    """Latency from msprof (``OpBasicInfo.csv`` on the device, the simulator's traces in sim);
    correctness from the host program's own check; on the device the program's event
    samples of the same run are compared with msprof's durations."""
    checked = measurement_from_events(app_stdout, cost_s)
    if not checked.ok:
        return checked
    try:
        durations = (simulator_durations_us(output_dir) if run_mode == "sim"
                     else msprof_durations_us(output_dir))
    except ResultFormatError as exc:
        return Measurement.failure("runtime", str(exc), cost_s)
    timing = summarize([d * 1e-6 for d in durations])
    extra: dict[str, Any] = {**checked.extra, "samples": len(durations), "timing": "msprof",
                             "event_latency_s": checked.latency_s}
    if run_mode != "sim" and checked.latency_s is not None:
        gap = relative_gap(timing.median_s, checked.latency_s)
        extra["timing_gap"] = gap
        if gap > AGREEMENT:
            warning = timing_warning(timing.median_s, checked.latency_s, gap)
            extra["timing_warning"] = warning
            LOG.warning("%s", warning)
    return Measurement.success(timing.median_s, cost_s, spread=timing.spread, extra=extra,
                               samples_s=timing.samples)


def timing_warning(msprof_s: float, events_s: float, gap: float) -> str:
    return (f"npu timing: msprof's Task Duration {msprof_s * 1e6:.3f} us and the event timing "
            f"{events_s * 1e6:.3f} us of the same run differ by {gap:.1%} (more than "
            f"{AGREEMENT:.0%}); the device may be shared or its clock not settled")


def compiler_errors(text: str, limit: int = ERROR_LINES) -> list[str]:
    """The first error lines of a build's output (compiler, linker or CMake)."""
    return [ln.strip() for ln in text.splitlines() if _ERROR_LINE.search(ln)][:limit]


def measurement_from_build_output(text: str, cost_s: float) -> Measurement:
    """A build failure with its first error lines; a buffer overflow is named as such."""
    errors = compiler_errors(text) or [ln.strip() for ln in _nonblank(text)][:ERROR_LINES]
    extra: dict[str, Any] = {}
    overflow = next((m.group(1) for ln in errors if (m := _OVERFLOW.search(ln))), None)
    head = "build failed"
    if overflow is not None:
        extra["overflow"] = overflow
        head = f"build failed: {overflow} buffer overflow"
    return Measurement.failure("build", head + "\n" + "\n".join(errors), cost_s, extra=extra)


def _nonblank(text: str) -> Iterable[str]:
    return (ln for ln in text.splitlines() if ln.strip())
