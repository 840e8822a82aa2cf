"""How often a server runs each batch size or prompt length: the shape distribution a
kernel set is chosen for.

A study tunes a few buckets; a server sends every batch size its scheduler forms and
every prompt length its users send. A mix names the dimension that varies (``batch``
for decode steps, ``seq_len`` for prefills) and a weight per value, from one of:

* a range, ``{"batch": {"low": 1, "high": 256, "weighting": "log"}}``: every integer
  from low to high, each weighted ``uniform`` (1) or ``log`` (1 / value: each doubling
  of the value carries the same weight);
* a serving log, a CSV of counts: a header with ``batch`` or ``seq_len`` and
  ``count``, one row per value seen (rows of one value add up); after the header,
  lines starting with ``#`` are comments.

Weights are relative; :attr:`ShapeMix.probabilities` sums to 1. Every failure is one
:class:`~aoe_optuna.workload.files.WorkloadFileError` line naming the file (or
``--mix``), the key or line, and what was expected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aoe_optuna.workload.csv_rows import CsvRows
from aoe_optuna.workload.files import WorkloadFileError, checked_file, shown

DIMS = {"batch": 65536, "seq_len": 1 << 20}  # what may vary, and its largest value
WEIGHTINGS = ("uniform", "log")
MAX_VALUES = 1 << 20  # distinct values of one mix
MAX_COUNT = 1 << 62
LOG_WHAT = "a serving log (CSV: batch or seq_len, count)"


@dataclass(frozen=True)
class ShapeMix:
    """Distinct values of ``dim``, ascending, and the weight of each (all > 0)."""

    dim: str
    values: np.ndarray  # int64, ascending, distinct
    weights: np.ndarray  # float64, > 0
    source: str

    @property
    def probabilities(self) -> np.ndarray:
        return self.weights / self.weights.sum()

    def describe(self) -> str:
        lo, hi = int(self.values[0]), int(self.values[-1])
        return f"{self.dim} {lo}..{hi} ({len(self.values)} values, {self.source})"


def read_mix(text: str) -> ShapeMix:
    """``--mix``: a JSON range (inline, starting with ``{``, or a ``.json`` file) or a
    serving log CSV file."""
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise WorkloadFileError("--mix", "text", "a JSON object such as "
                                    '{"batch": {"low": 1, "high": 256}}', exc.msg) from None
        return range_mix(doc, "--mix")
    path = Path(text)
    if path.suffix.lower() == ".json":
        raw = checked_file(path, "a mix range (JSON)").read_text(encoding="utf-8-sig")
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise WorkloadFileError(str(path), f"line {exc.lineno}", "valid JSON",
                                    exc.msg) from None
        return range_mix(doc, str(path))
    return read_serving_log(path)


def range_mix(doc: Any, source: str) -> ShapeMix:
    """``{"<dim>": {"low": L, "high": H, "weighting": "uniform" | "log"}}``."""
    if not isinstance(doc, Mapping) or len(doc) != 1 or next(iter(doc)) not in DIMS:
        raise WorkloadFileError(source, "document", "an object with one key, batch or "
                                "seq_len, holding {low, high, weighting}", shown(doc))
    dim = next(iter(doc))
    body = doc[dim]
    where = f"key '{dim}'"
    if not isinstance(body, Mapping):
        raise WorkloadFileError(source, where, "an object {low, high, weighting}", shown(body))
    unknown = sorted(set(body) - {"low", "high", "weighting"})
    if unknown:
        raise WorkloadFileError(source, f"key '{dim}.{unknown[0]}'",
                                "one of low, high, weighting", "an unknown key")
    top = DIMS[dim]
    bounds = []
    for name in ("low", "high"):
        v = body.get(name)
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
            raise WorkloadFileError(source, f"key '{dim}.{name}'",
                                    f"an integer from 1 to {top:,}", shown(v))
        bounds.append(v)
    low, high = bounds
    if high < low:
        raise WorkloadFileError(source, f"key '{dim}.high'", f"at least low ({low})",
                                shown(high))
    weighting = body.get("weighting", "uniform")
    if weighting not in WEIGHTINGS:
        raise WorkloadFileError(source, f"key '{dim}.weighting'",
                                f"one of {', '.join(WEIGHTINGS)}", shown(weighting))
    values = np.arange(low, high + 1, dtype=np.int64)
    weights = np.ones(len(values)) if weighting == "uniform" else 1.0 / values
    return ShapeMix(dim, values, weights.astype(float), f"{source}: {weighting} weighting")


def read_serving_log(path: str | Path) -> ShapeMix:
    """A serving log of counts per batch size or prompt length (module docstring)."""
    source = str(path)
    rows = CsvRows(checked_file(path, LOG_WHAT), source)
    dims = [h for h in rows.header if h in DIMS]
    if len(dims) != 1 or "count" not in rows.header:
        got = shown(",".join(rows.header)) if rows.header else "an empty file"
        raise WorkloadFileError(source, "line 1", "a header naming one of batch, seq_len "
                                "and the column count, such as 'batch,count'", got)
    dim, top = dims[0], DIMS[dims[0]]
    counts: dict[int, int] = {}
    for line, row in rows:
        first = next(iter(row.values()), "")
        if first.lstrip().startswith("#"):
            continue
        value = _whole(row.get(dim), source, line, dim, 1, top)
        count = _whole(row.get("count"), source, line, "count", 0, MAX_COUNT)
        if count:
            counts[value] = counts.get(value, 0) + count
            if len(counts) > MAX_VALUES:
                raise WorkloadFileError(source, f"line {line}", f"at most {MAX_VALUES:,} "
                                        f"distinct values of {dim}", "more")
    if not counts:
        raise WorkloadFileError(source, "rows", f"at least one row with a count above 0 "
                                f"({dim},count)", "none")
    values = np.array(sorted(counts), dtype=np.int64)
    weights = np.array([counts[v] for v in values.tolist()], dtype=float)
    return ShapeMix(dim, values, weights, f"{source}: serving log")


def _whole(text: str | None, source: str, line: int, column: str, low: int,
           high: int) -> int:
    raw = (text or "").strip()
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise WorkloadFileError(source, f"line {line}, column '{column}'",
                                f"a whole number from {low} to {high:,}",
                                shown(raw) if raw else "nothing")
    return value
