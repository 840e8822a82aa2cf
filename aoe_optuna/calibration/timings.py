"""A chip's measured kernel timings, read for ``aoe-tune calibrate``: one row per timing.

Two plain forms, the same columns: a CSV with a header, or a JSON list of
objects (or ``{"rows": [...]}``):

* ``op``: ``gemm`` (or ``matmul``, or an msprof MatMul type such as ``MatMulV2``);
* ``shape``: ``MxNxK``, e.g. ``128x256x1024`` (the order catlass and the
  operators table write);
* ``dtype``: ``fp16``, ``bf16``, ``fp32`` or ``int8``;
* ``tiling`` (may be empty): the kernel's config, ``tile_m=128;tile_n=256``
  in a CSV, an object in JSON, each parameter once; empty: a library kernel,
  whose tiling the simulator picks as the best of the library space;
* ``time_us``: the kernel's measured time, microseconds.

An msprof ``op_summary`` CSV gives its MatMul rows, each shape's mean Task
Duration (library kernels: their tiling is not in the profile). Rows are
yielded one at a time, so a large file costs the memory of what is kept of
it (:mod:`.kernels`), and a long CSV read says how far it got on stderr. Any
bad row is one :class:`~aoe_optuna.workload.files.WorkloadFileError` line
naming the file and the row; nothing is fitted from a file with one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aoe_optuna.calibration.input_caps import MAX_SHAPES, SHAPES_WHY
from aoe_optuna.hardware.profile import DTYPE_BYTES
from aoe_optuna.space.params import KNOWN_PARAMS, ParamError, canonical_value
from aoe_optuna.workload.csv_rows import CsvRows
from aoe_optuna.workload.files import WorkloadFileError, checked_file, read_json, shown
from aoe_optuna.workload.gemm import MAX_DIM, Gemm
from aoe_optuna.workload.msprof import GEMM_OP_TYPES, read_op_summary
from aoe_optuna.workload.read_progress import CHECK_EVERY, ProgressLine, ReadProgress

COLUMNS = ("op", "shape", "dtype", "time_us")  # and the optional "tiling"
GEMM_OPS = frozenset({"gemm", "matmul"} | {t.lower() for t in GEMM_OP_TYPES})
WHAT = "timings: a CSV or JSON of op, shape, dtype, tiling, time_us rows"
Counter = Callable[[], int]


@dataclass(frozen=True)
class TimedKernel:
    """One measured kernel: where it was read, the GEMM, its tiling (None: a library
    kernel's, not given), its time, and the family of kernels its op belongs to (the
    simulator scales each family's times by its own constants; "gemm" for every op
    taken now)."""

    where: str
    gemm: Gemm
    tiling: dict[str, Any] | None
    time_us: float
    family: str = "gemm"

    @property
    def source(self) -> str:
        """The file (or study) the row came from: a fold of the leave-out checks."""
        return self.where.split(": ", 1)[0]

    @property
    def place(self) -> str:
        """Where in :attr:`source` the row is (``line 7``, ``row 3``, ``trial 4 qkv``)."""
        return self.where.split(": ", 1)[-1]


def read_timings(path: str | Path, counted: Counter = lambda: 0) -> Iterator[TimedKernel]:
    """The rows of a plain CSV or JSON timings file, one at a time; ``counted`` says how
    many distinct kernels the caller holds so far, for the progress line."""
    source = str(path)
    parse = _RowParser(source)
    if source.lower().endswith(".json"):
        yield from _json_rows(path, parse)
        return
    rows = CsvRows(checked_file(path, WHAT), source)
    missing = [c for c in COLUMNS if c not in rows.header]
    if missing:
        raise WorkloadFileError(source, "line 1", f"a header with the columns "
                                f"{', '.join(COLUMNS)} (and optionally tiling)",
                                f"no column '{missing[0]}'")
    progress = ReadProgress(rows, "distinct kernels", counted)
    found = False
    for line, row in rows:
        progress.tick(line)
        found = True
        yield parse(f"line {line}", row)
    if not found:
        raise WorkloadFileError(source, "document", "a header and one row per kernel", "no rows")


def read_msprof_timings(path: str | Path) -> Iterator[TimedKernel]:
    """An msprof op_summary's MatMul shapes, each with its mean measured duration (the
    profile is read a row at a time, with its progress line, and stops at the line that
    passes the calibration's shape cap)."""
    step = read_op_summary(path, max_shapes=MAX_SHAPES, shapes_cap_why=SHAPES_WHY)
    for g, us in zip(step.gemms, step.profiled_us, strict=True):
        where = f"{path}: shape {g.M}x{g.N}x{g.K} {g.dtype}"
        if not 0 < us < math.inf:  # a MatMul whose tasks all took 0 us: nothing to fit
            raise WorkloadFileError(str(path), f"shape {g.M}x{g.N}x{g.K} {g.dtype}, column "
                                    "'Task Duration(us)'", "a mean duration above 0", f"{us}")
        yield TimedKernel(where, Gemm(g.M, g.K, g.N, g.dtype, g.name), None, us)


def _json_rows(path: str | Path, parse: _RowParser) -> Iterator[TimedKernel]:
    doc = read_json(path, WHAT)
    items = doc.get("rows") if isinstance(doc, Mapping) else doc
    if not isinstance(items, list) or not items:
        raise WorkloadFileError(str(path), "document", "a list of rows (or {\"rows\": [...]})",
                                shown(doc))
    progress = ProgressLine()
    for i, item in enumerate(items):
        if i % CHECK_EVERY == 0:
            progress.say(lambda i=i: f"{path}: read {i:,} of {len(items):,} rows")
        yield parse(f"row {i}", item)


class _RowParser:
    """One row of a file into a :class:`TimedKernel`. A shape and a tiling written the
    same way in many rows are parsed once (a 200,000-row file of a few kernels spent
    most of its read parsing the same cells again)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._gemms: dict[tuple[str, str], Gemm] = {}
        self._tilings: dict[str, dict[str, Any] | None] = {}

    def __call__(self, where: str, item: Any) -> TimedKernel:
        def fail(column: str, expected: str, got: Any) -> WorkloadFileError:
            return WorkloadFileError(self.source, f"{where}, column '{column}'", expected,
                                     shown(got))

        if not isinstance(item, Mapping):
            raise WorkloadFileError(self.source, where, "an object with op, shape, dtype, "
                                    "time_us", shown(item))
        op = item.get("op")
        family = kernel_family(op)
        if family is None:
            raise fail("op", "a GEMM: gemm, matmul or an msprof MatMul type (attention and "
                       "vector kernels are not calibrated: their scale stays 1)", op)
        shape, dtype = item.get("shape"), item.get("dtype")
        gemm = self._gemms.get((shape, dtype)) if isinstance(shape, str) and isinstance(
            dtype, str) else None
        if gemm is None:
            gemm = _gemm(shape, dtype, fail)
            if isinstance(shape, str):
                self._gemms[(shape, dtype)] = gemm
        time_us = _time(item.get("time_us"))
        if time_us is None:
            raise fail("time_us", "a measured time in microseconds, above 0",
                       item.get("time_us"))
        raw = item.get("tiling")
        if isinstance(raw, str) and raw in self._tilings:
            tiling = self._tilings[raw]
        else:
            tiling = _tiling(raw, lambda why, got: fail("tiling", why, got))
            if isinstance(raw, str):
                self._tilings[raw] = tiling
        return TimedKernel(f"{self.source}: {where}", gemm, tiling, time_us, family)


def kernel_family(op: Any) -> str | None:
    """The family of kernels a row's ``op`` names (None: not one calibrated)."""
    return "gemm" if isinstance(op, str) and op.strip().lower() in GEMM_OPS else None


def _gemm(shape: Any, dtype: Any, fail: Any) -> Gemm:
    if not isinstance(dtype, str) or dtype.strip() not in DTYPE_BYTES:
        raise fail("dtype", f"one of {', '.join(DTYPE_BYTES)}", dtype)
    parts = shape.lower().replace("*", "x").split("x") if isinstance(shape, str) else []
    try:
        dims = [int(p.strip()) for p in parts]
    except ValueError:
        dims = []
    if len(dims) != 3 or not all(1 <= d <= MAX_DIM for d in dims):
        raise fail("shape", f"MxNxK such as 128x256x1024, each from 1 to {MAX_DIM:,}", shape)
    m, n, k = dims
    return Gemm(m, k, n, dtype.strip(), f"{m}x{n}x{k}")


def _time(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        us = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return us if 0 < us < math.inf else None


def _tiling(value: Any, fail: Any) -> dict[str, Any] | None:
    """``None`` for an empty cell; ``name=value;...`` or an object checked by params.py,
    each parameter named once (``tile_m=128;tile_m=64`` kept the last before)."""
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
        if name in out:
            raise fail(f"each parameter once ({name} is given twice)", value)
        try:
            out[name] = canonical_value(name, _number(v))
        except ParamError as exc:
            raise fail(f"{name}: {exc.expected}", v) from None
    return out or None  # no parameter given: the library's kernel, as an empty cell


def _number(v: Any) -> Any:
    """A CSV cell's integer as an int; anything else as it is."""
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    return v
