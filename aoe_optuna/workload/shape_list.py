"""A list of GEMM shapes (CSV or JSON) as a workload.

CSV: a header naming the columns ``M``, ``N``, ``K`` (required) and
``dtype``, ``count``, ``name`` (optional), one GEMM per line; lines whose first
cell starts with ``#`` are comments. JSON: a list of objects with the same
keys, or an object ``{"gemms": [...], "tokens_per_step": 16, "fixed_s": 0.002}``.

A bare list has no model behind it, so tokens/s is a convention: with
``tokens_per_step`` = 1 (the default) the objective is passes of the list per
second, 1 / sum(count x latency); give the tokens one pass processes (the
batch of a decode step, batch x seq_len of a prefill) to read it as tokens/s.
Either way the best tiling is the same.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aoe_optuna.workload.dtypes import ACCEPTED, dtype_name
from aoe_optuna.workload.files import WorkloadFileError, read_json, read_text, shown
from aoe_optuna.workload.gemm import MAX_DIM, Gemm, Workload

ROW_KEYS = ("name", "M", "K", "N", "dtype", "count")
MAX_COUNT = 1 << 30
WHAT = "a shape list (CSV or JSON)"


@dataclass(frozen=True)
class ShapeList:
    """GEMMs read from a shape list, and what its JSON form said about the step."""

    gemms: tuple[Gemm, ...]
    tokens_per_step: int | None = None
    fixed_s: float | None = None

    def rows(self) -> list[dict[str, Any]]:
        """The canonical rows: every key spelled out, in the list's order."""
        return [{"name": g.name, "M": g.M, "K": g.K, "N": g.N, "dtype": g.dtype,
                 "count": g.count} for g in self.gemms]


def read_shape_list(path: str | Path, default_dtype: str = "fp16") -> ShapeList:
    """The shape list at ``path``: JSON for a ``.json`` file, CSV otherwise."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        return shapes_from_json(read_json(path, WHAT), str(path), default_dtype)
    return shapes_from_csv(read_text(path, WHAT), str(path), default_dtype)


def shapes_from_json(data: Any, source: str, default_dtype: str = "fp16") -> ShapeList:
    """A list of row objects, or ``{"gemms": [...], "tokens_per_step", "fixed_s"}``."""
    if isinstance(data, list):
        return ShapeList(shapes_from_rows(data, source, "", default_dtype))
    if not isinstance(data, Mapping):
        raise WorkloadFileError(source, "document", "a list of GEMMs or an object with "
                                "\"gemms\"", shown(data))
    unknown = sorted(set(data) - {"gemms", "tokens_per_step", "fixed_s"})
    if unknown:
        raise WorkloadFileError(source, f"key '{unknown[0]}'",
                                "one of the keys gemms, tokens_per_step, fixed_s",
                                "an unknown key")
    if "gemms" not in data:
        raise WorkloadFileError(source, "key 'gemms'", "a list of GEMMs", "nothing")
    tokens = data.get("tokens_per_step")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)
                               or not 1 <= tokens <= MAX_COUNT):
        raise WorkloadFileError(source, "key 'tokens_per_step'",
                                f"an integer from 1 to {MAX_COUNT:,}", shown(tokens))
    fixed = data.get("fixed_s")
    if fixed is not None and (isinstance(fixed, bool) or not isinstance(fixed, (int, float))
                              or not 0 <= fixed < math.inf):
        raise WorkloadFileError(source, "key 'fixed_s'", "a finite time in seconds, at least 0",
                                shown(fixed))
    gemms = shapes_from_rows(data["gemms"], source, "gemms", default_dtype)
    return ShapeList(gemms, tokens, None if fixed is None else float(fixed))


def shapes_from_rows(rows: Any, source: str, key: str = "",
                     default_dtype: str = "fp16") -> tuple[Gemm, ...]:
    """GEMMs from row objects (JSON, or a stored spec's canonical rows)."""
    if not isinstance(rows, list) or not rows:
        raise WorkloadFileError(source, f"key '{key}'" if key else "document",
                                "a non-empty list of GEMMs", shown(rows))
    out = []
    for i, row in enumerate(rows):
        where = f"{key}[{i}]" if key else f"[{i}]"
        if not isinstance(row, Mapping):
            raise WorkloadFileError(source, f"key '{where}'",
                                    "an object with M, K, N (dtype, count, name)", shown(row))
        unknown = sorted(set(row) - set(ROW_KEYS))
        if unknown:
            raise WorkloadFileError(source, f"key '{where}.{unknown[0]}'",
                                    f"one of the keys {', '.join(ROW_KEYS)}", "an unknown key")
        out.append(_gemm(lambda k, w=where: f"key '{w}.{k}'", row, source, default_dtype))
    return _unique(out, source, lambda i: f"key '{key}[{i}].name'" if key else f"[{i}].name")


def shapes_from_csv(text: str, source: str, default_dtype: str = "fp16") -> ShapeList:
    """GEMMs from CSV text with a header row."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise WorkloadFileError(source, "document", "a header row and a row per GEMM",
                                "an empty file")
    header = [h.strip() for h in next(csv.reader([lines[0][1]]))]
    columns = {_column(h): i for i, h in enumerate(header)}
    unknown = [h for h in header if _column(h) not in ROW_KEYS]
    if unknown:
        raise WorkloadFileError(source, f"line {lines[0][0]}, column '{unknown[0]}'",
                                f"a header of the columns {', '.join(ROW_KEYS)}",
                                "an unknown column")
    for need in ("M", "K", "N"):
        if need not in columns:
            raise WorkloadFileError(source, f"line {lines[0][0]}",
                                    "a header with the columns M, K, N (and dtype, count, "
                                    "name)", f"no column {need}")
    gemms = []
    line_of = []
    for n, line in lines[1:]:
        cells = next(csv.reader([line]))
        if len(cells) != len(header):
            raise WorkloadFileError(source, f"line {n}", f"{len(header)} cells as in the header",
                                    f"{len(cells)}")
        row = {k: cells[i].strip() for k, i in columns.items() if cells[i].strip() != ""}
        gemms.append(_gemm(lambda k, n=n: f"line {n}, column '{k}'", row, source,
                           default_dtype))
        line_of.append(n)
    if not gemms:
        raise WorkloadFileError(source, "document", "at least one GEMM row", "only a header")
    return ShapeList(_unique(gemms, source, lambda i: f"line {line_of[i]}, column 'name'"))


def shape_list_workload(shapes: ShapeList, name: str, tokens_per_step: int | None = None,
                        fixed_s: float | None = None) -> Workload:
    """The list as one step: the spec's ``tokens_per_step``/``fixed_s`` win over the file's."""
    tokens = tokens_per_step or shapes.tokens_per_step or 1
    fixed = fixed_s if fixed_s is not None else (shapes.fixed_s or 0.0)
    return Workload(name=f"{name} ({len(shapes.gemms)} shapes)", gemms=shapes.gemms,
                    tokens_per_step=tokens, fixed_s=fixed)


def _column(header: str) -> str:
    """Column names: M, K, N in either case; the others in lower case."""
    return header.upper() if header.upper() in ("M", "K", "N") else header.lower()


def _gemm(where: Any, row: Mapping[str, Any], source: str, default_dtype: str) -> Gemm:
    """One GEMM from a row; ``where(key)`` names the cell in error messages."""
    dims = {}
    for key in ("M", "K", "N"):
        if key not in row:
            raise WorkloadFileError(source, where(key), f"an integer from 1 to {MAX_DIM:,}",
                                    "nothing")
        dims[key] = _integer(row[key], MAX_DIM, source, where(key))
    count = _integer(row.get("count", 1), MAX_COUNT, source, where("count"))
    raw_dtype = row.get("dtype", default_dtype)
    dtype = dtype_name(raw_dtype) if isinstance(raw_dtype, str) else None
    if dtype is None:
        raise WorkloadFileError(source, where("dtype"), ACCEPTED, shown(raw_dtype))
    name = row.get("name", f"gemm_{dims['M']}x{dims['K']}x{dims['N']}_{dtype}")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise WorkloadFileError(source, where("name"), "a non-empty name (up to 200 characters)",
                                shown(name))
    return Gemm(dims["M"], dims["K"], dims["N"], dtype, name.strip(), count)


def _integer(value: Any, high: int, source: str, where: str) -> int:
    if isinstance(value, str):
        try:
            value = int(value.replace("_", ""))
        except ValueError:
            raise WorkloadFileError(source, where, f"an integer from 1 to {high:,}",
                                    shown(value)) from None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise WorkloadFileError(source, where, f"an integer from 1 to {high:,}", shown(value))
    return value


def _unique(gemms: Sequence[Gemm], source: str, where: Any) -> tuple[Gemm, ...]:
    seen: set[str] = set()
    for i, g in enumerate(gemms):
        if g.name in seen:
            raise WorkloadFileError(source, where(i), "a name no other GEMM of the list has "
                                    "(rows of one shape: one row with a count)", repr(g.name))
        seen.add(g.name)
    return tuple(gemms)
