"""Read what an npu-backend candidate printed: the host program's result line, the CSV of
``msprof op``, and compiler errors, each turned into a :class:`Measurement`.

* The host program (``npu_templates/main.cpp``) ends with one line
  ``AOE_RESULT {json}``: ``status`` ok / accuracy / runtime / usage, the timed
  samples (seconds per launch) and the correctness check.
* ``msprof op --output=DIR`` writes ``OpBasicInfo.csv`` (one row per profiled
  launch, column ``Task Duration(us)``) somewhere below DIR.
* A failed build leaves the compiler's ``file:line:col: error: ...`` lines in
  its output; a capacity ``static_assert`` of the kernel names the buffer.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aoe_optuna.backends.base import Measurement
from aoe_optuna.backends.timing import summarize

RESULT_PREFIX = "AOE_RESULT "
DURATION_COLUMN = "Task Duration(us)"
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
    extra = {k: rec[k] for k in ("mode", "soc", "block_dim", "launches") if k in rec}
    if status == "runtime":
        return Measurement.failure(
            "runtime", f"{rec.get('call', 'an ACL call')} failed with ACL error "
            f"{rec.get('code', '?')}", cost_s, extra=extra)
    if status == "usage":
        return Measurement.failure("runtime", f"host program refused its arguments: "
                                   f"{rec.get('reason', '')}", cost_s, extra=extra)
    if status == "accuracy":
        bad = rec.get("first_bad", {})
        where = (f"; first at C[{bad['row']}, {bad['col']}]: got {bad['got']:g}, "
                 f"want {bad['want']:g}") if bad else ""
        return Measurement.failure(
            "accuracy", f"{rec.get('bad')} of {rec.get('checked')} checked entries of C out of "
            f"tolerance (max abs error {rec.get('max_abs_err', float('nan')):g}){where}",
            cost_s, extra=extra)
    if status != "ok":
        return Measurement.failure("runtime", f"host program reported status {status!r}", cost_s)
    samples = [float(s) for s in rec.get("samples_s", [])]
    if not samples or min(samples) <= 0:
        return Measurement.failure("runtime", "host program reported no positive timing",
                                   cost_s, extra=extra)
    timing = summarize(samples)
    return Measurement.success(timing.median_s, cost_s, spread=timing.spread,
                               extra={**extra, "samples": len(samples), "timing": "events"})


def msprof_durations_us(output_dir: Path) -> list[float]:
    """Every ``Task Duration(us)`` of every ``OpBasicInfo.csv`` below ``output_dir``."""
    files = sorted(Path(output_dir).rglob("OpBasicInfo.csv"))
    if not files:
        raise ResultFormatError(f"msprof wrote no OpBasicInfo.csv under {output_dir}")
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
                    durations.append(float(row[DURATION_COLUMN]))
    if not durations:
        raise ResultFormatError(f"msprof's OpBasicInfo.csv under {output_dir} has no rows")
    return durations


def measurement_from_msprof(output_dir: Path, app_stdout: str, cost_s: float) -> Measurement:
    """Latency from msprof's CSV; correctness still from the host program's own check."""
    checked = measurement_from_events(app_stdout, cost_s)
    if not checked.ok:
        return checked
    try:
        durations = msprof_durations_us(output_dir)
    except ResultFormatError as exc:
        return Measurement.failure("runtime", str(exc), cost_s)
    timing = summarize([d * 1e-6 for d in durations])
    return Measurement.success(timing.median_s, cost_s, spread=timing.spread,
                               extra={**checked.extra, "samples": len(durations),
                                      "timing": "msprof"})


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
