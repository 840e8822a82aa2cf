"""A chip's measured kernel timings, read for ``aoe-tune calibrate``: one row per kernel.

Two plain forms, the same columns: a CSV with a header, or a JSON list of
objects (or ``{"rows": [...]}``):

* ``op``: ``gemm`` (or ``matmul``, or an msprof MatMul type such as ``MatMulV2``);
* ``shape``: ``MxNxK``, e.g. ``128x256x1024`` (the order catlass and the
  operators table write);
* ``dtype``: ``fp16``, ``bf16``, ``fp32`` or ``int8``;
* ``tiling`` (may be empty): the kernel's config, ``tile_m=128;tile_n=256``
  in a CSV, an object in JSON; empty: a library kernel, whose tiling the
  simulator picks as the best of the library space;
* ``time_us``: the kernel's measured time, microseconds.

An msprof ``op_summary`` CSV gives its MatMul rows, each shape's mean Task
Duration (library kernels: their tiling is not in the profile). Any bad row
is one :class:`~aoe_optuna.workload.files.WorkloadFileError` line naming the
file and the row; nothing is fitted from a file with one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aoe_optuna.hardware.profile import DTYPE_BYTES
from aoe_optuna.space.params import KNOWN_PARAMS, ParamError, canonical_value
from aoe_optuna.workload.csv_rows import CsvRows
from aoe_optuna.workload.files import WorkloadFileError, checked_file, read_json, shown
from aoe_optuna.workload.gemm import Gemm
from aoe_optuna.workload.msprof import GEMM_OP_TYPES, read_op_summary

COLUMNS = ("op", "shape", "dtype", "time_us")  # and the optional "tiling"
GEMM_OPS = frozenset({"gemm", "matmul"} | {t.lower() for t in GEMM_OP_TYPES})
WHAT = "timings: a CSV or JSON of op, shape, dtype, tiling, time_us rows"


@dataclass(frozen=True)
class TimedKernel:
    """One measured kernel: where it was read, the GEMM, its tiling (None: a library
    kernel's, not given) and its time."""

    where: str
    gemm: Gemm
    tiling: dict[str, Any] | None
    time_us: float

    @property
    def source(self) -> str:
        """The file (or study) the row came from: a fold of the leave-out checks."""
        return self.where.split(": ", 1)[0]


def read_timings(path: str | Path) -> list[TimedKernel]:
    """The rows of a plain CSV or JSON timings file."""
    source = str(path)
    if str(path).lower().endswith(".json"):
        doc = read_json(path, WHAT)
        items = doc.get("rows") if isinstance(doc, Mapping) else doc
        if not isinstance(items, list) or not items:
            raise WorkloadFileError(source, "document", "a list of rows (or {\"rows\": [...]})",
                                    shown(doc))
        return [_row(source, f"row {i}", item) for i, item in enumerate(items)]
    rows = CsvRows(checked_file(path, WHAT), source)
    missing = [c for c in COLUMNS if c not in rows.header]
    if missing:
        raise WorkloadFileError(source, "line 1", f"a header with the columns "
                                f"{', '.join(COLUMNS)} (and optionally tiling)",
                                f"no column '{missing[0]}'")
    out = [_row(source, f"line {line}", row) for line, row in rows]
    if not out:
        raise WorkloadFileError(source, "document", "a header and one row per kernel", "no rows")
    return out


def read_msprof_timings(path: str | Path) -> list[TimedKernel]:
    """An msprof op_summary's MatMul shapes, each with its mean measured duration."""
    step = read_op_summary(path)
    return [TimedKernel(f"{path}: shape {g.M}x{g.N}x{g.K} {g.dtype}",
                        Gemm(g.M, g.K, g.N, g.dtype, g.name), None, us)
            for g, us in zip(step.gemms, step.profiled_us, strict=True)]


def _row(source: str, where: str, item: Any) -> TimedKernel:
    def fail(column: str, expected: str, got: Any) -> WorkloadFileError:
        return WorkloadFileError(source, f"{where}, column '{column}'", expected, shown(got))

    if not isinstance(item, Mapping):
        raise WorkloadFileError(source, where, "an object with op, shape, dtype, time_us",
                                shown(item))
    op = item.get("op")
    if not isinstance(op, str) or op.strip().lower() not in GEMM_OPS:
        raise fail("op", "a GEMM: gemm, matmul or an msprof MatMul type (attention and "
                   "vector kernels are not calibrated: their scale stays 1)", op)
    dtype = item.get("dtype")
    if not isinstance(dtype, str) or dtype.strip() not in DTYPE_BYTES:
        raise fail("dtype", f"one of {', '.join(DTYPE_BYTES)}", dtype)
    m, n, k = _shape(item.get("shape"), lambda got: fail("shape", "MxNxK such as "
                                                             "128x256x1024", got))
    try:
        gemm = Gemm(m, k, n, dtype.strip(), f"{m}x{n}x{k}")
    except ValueError as exc:
        raise fail("shape", str(exc).split(": ", 1)[-1], item.get("shape")) from None
    time_us = _time(item.get("time_us"))
    if time_us is None:
        raise fail("time_us", "a measured time in microseconds, above 0", item.get("time_us"))
    tiling = _tiling(item.get("tiling"), lambda why, got: fail("tiling", why, got))
    return TimedKernel(f"{source}: {where}", gemm, tiling, time_us)


def _shape(text: Any, fail: Any) -> tuple[int, int, int]:
    parts = text.lower().replace("*", "x").split("x") if isinstance(text, str) else []
    try:
        dims = [int(p.strip()) for p in parts]
    except ValueError:
        raise fail(text) from None
    if len(dims) != 3:
        raise fail(text)
    return dims[0], dims[1], dims[2]


def _time(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        us = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return us if 0 < us < math.inf else None


def _tiling(value: Any, fail: Any) -> dict[str, Any] | None:
    """``None`` for an empty cell; ``name=value;...`` or an object checked by params.py."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        pairs: Iterable[tuple[str, Any]] = []
        items = [p for p in value.replace(",", ";").split(";") if p.strip()]
        if not all("=" in p for p in items):
            raise fail("name=value pairs such as tile_m=128;tile_n=256", value)
        pairs = [(p.split("=", 1)[0].strip(), p.split("=", 1)[1].strip()) for p in items]
    elif isinstance(value, Mapping):
        pairs = value.items()
    else:
        raise fail("name=value pairs, or an object in JSON", value)
    out: dict[str, Any] = {}
    for name, v in pairs:
        if name not in KNOWN_PARAMS:
            raise fail(f"parameters of {', '.join(sorted(KNOWN_PARAMS)[:6])}, ...", name)
        try:
            out[name] = canonical_value(name, _number(v))
        except ParamError as exc:
            raise fail(f"{name}: {exc}", v) from None
    return out


def _number(v: Any) -> Any:
    """A CSV cell's integer as an int; anything else as it is."""
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    return v
