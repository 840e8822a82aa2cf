"""An msprof operator summary (``op_summary_*.csv``) as a workload.

``msprof --application=...`` on an Ascend 910B writes one row per task with
(among others) the columns ``OP Type``, ``Task Type``, ``Task Duration(us)``,
``Input Shapes``, ``Input Data Types``, ``Input Formats``, ``Output Shapes``,
``Output Formats`` and ``Device_id`` (Ascend's op_summary docs; the writer is
analysis/csrc/application/summary/op_summary_assembler.cpp of the msprof
sources). Shapes are ``1,3584;4608,3584``: ``;`` between inputs, ``,``
between dimensions; types are GE's names (``FLOAT16``, ``DT_BF16``, ``FLOAT``,
``INT8``); formats ``ND`` or ``FRACTAL_NZ``.

The MatMul-type rows become GEMMs: M and N from the output, K from the first
input (either orientation: a transposed operand is found by its dimensions),
FRACTAL_NZ operands converted back to their ND shape; rows of one shape are
merged with a count. Everything else (vector operators, attention,
communication, MatMuls of types no kernel here runs, such as weight-only
quantized ones) is the fixed time of the step: the sum of those tasks' Task
Duration per step. Idle gaps between tasks and overlap between streams are
not counted (device busy time, not wall time).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aoe_optuna.workload.csv_rows import CsvRows, Row
from aoe_optuna.workload.dtypes import ACCEPTED, dtype_name, is_known_untuned
from aoe_optuna.workload.files import WorkloadFileError, checked_file, shown
from aoe_optuna.workload.gemm import MAX_DIM, Gemm, Workload
from aoe_optuna.workload.read_progress import ReadProgress
from aoe_optuna.workload.shape_list import shapes_from_rows

OP_TYPE = "OP Type"
TASK_TYPE = "Task Type"
DURATION = "Task Duration(us)"
INPUT_SHAPES = "Input Shapes"
INPUT_TYPES = "Input Data Types"
INPUT_FORMATS = "Input Formats"
OUTPUT_SHAPES = "Output Shapes"
OUTPUT_FORMATS = "Output Formats"
DEVICE = "Device_id"
REQUIRED = (OP_TYPE, DURATION, INPUT_SHAPES, INPUT_TYPES, OUTPUT_SHAPES)

# Operator types whose task is one GEMM (or a batch/group of GEMMs) on the cube unit.
GEMM_OP_TYPES = frozenset({
    "MatMul", "MatMulV2", "MatMulV3", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3",
    "GroupedMatmul", "QuantBatchMatmul", "QuantBatchMatmulV3", "QuantBatchMatmulV4",
    "WeightQuantBatchMatmulV2", "TransposeBatchMatMul",
})
COMM_TASK_TYPES = frozenset({"COMMUNICATION", "HCCL", "HCCL_AI_CPU"})
NZ_SLACK = 32  # a FRACTAL_NZ dimension is padded up to its fractal (16, or 32 for int8)
WHAT = "an msprof op_summary CSV"
MAX_SHAPES = 4096  # every trial measures every shape: more is hours per trial on an NPU
SHAPES_CAP_WHY = ("each trial measures every shape; raise the workload's max_shapes to take "
                  "more")
SHOWN_DEVICES = 64  # device ids kept for the message naming those present


@dataclass(frozen=True)
class ProfiledStep:
    """One forward step as the profile saw it: its GEMMs and the time of everything else."""

    gemms: tuple[Gemm, ...]
    profiled_us: tuple[float, ...]  # mean Task Duration of one GEMM of each shape
    other_us: float  # every other task of one step, communication and untuned MatMuls included
    comm_us: float = 0.0  # of other_us: communication tasks
    untuned_us: float = 0.0  # of other_us: MatMuls of types the kernels here do not take

    def document(self) -> dict[str, Any]:
        """The canonical, file-free form a stored study keeps (and :func:`step_from_document`
        reads back)."""
        rows = [{"name": g.name, "M": g.M, "K": g.K, "N": g.N, "dtype": g.dtype,
                 "count": g.count, "profiled_us": us}
                for g, us in zip(self.gemms, self.profiled_us, strict=True)]
        return {"gemms": rows, "other_us": self.other_us, "comm_us": self.comm_us,
                "untuned_us": self.untuned_us}


def read_op_summary(path: str | Path, steps: int = 1, device: int | None = None,
                    max_shapes: int = MAX_SHAPES,
                    shapes_cap_why: str = SHAPES_CAP_WHY) -> ProfiledStep:
    """The step that ``steps`` forward steps of one device (the lowest Device_id unless
    ``device`` is given) in the profile at ``path`` average to.

    The file is read a row at a time (its size costs time, not memory); more than
    ``max_shapes`` distinct GEMM shapes is refused as soon as it is seen (each trial
    measures every shape, so the cost of a trial grows with them); a long read says on
    stderr how far it got every few seconds.
    """
    source = str(path)
    rows = CsvRows(checked_file(path, WHAT), source)
    missing = [c for c in REQUIRED if c not in rows.header]
    if missing:
        raise WorkloadFileError(source, "line 1", f"{WHAT} header with the columns "
                                f"{', '.join(REQUIRED)}", f"no column '{missing[0]}'")
    has_device = DEVICE in rows.header
    if not has_device and device is not None:
        raise WorkloadFileError(source, "line 1", f"a column '{DEVICE}' to pick device "
                                f"{device} by", "none")
    chosen = _lowest_device(rows, source) if has_device and device is None else device
    merged: dict[tuple[int, int, int, str], list[float]] = {}  # key -> [gemms, us]
    other = comm = untuned = 0.0
    n_rows = n_matmul_rows = 0
    devices: set[int] = set()  # for the message when ``device`` has no rows
    progress = ReadProgress(rows, "GEMM shapes", merged.__len__)
    for line, row in rows:
        progress.tick(line)
        if chosen is not None:
            found_device = _device_id(row, source, line)
            if len(devices) < SHOWN_DEVICES:
                devices.add(found_device)
            if found_device != chosen:
                continue
        n_rows += 1
        us = _duration(row.get(DURATION), source, line)
        op = (row.get(OP_TYPE) or "").strip()
        if op not in GEMM_OP_TYPES:
            other += us
            if (row.get(TASK_TYPE) or "").strip() in COMM_TASK_TYPES:
                comm += us
            continue
        n_matmul_rows += 1
        found = _row_gemm(op, row, source, line)
        if found is None:
            other += us
            untuned += us
            continue
        key, n = found
        if key not in merged and len(merged) == max_shapes:
            raise WorkloadFileError(source, f"line {line}", f"at most {max_shapes:,} distinct "
                                    f"GEMM shapes ({shapes_cap_why})",
                                    f"shape {len(merged) + 1:,}")
        acc = merged.setdefault(key, [0.0, 0.0])
        acc[0] += n
        acc[1] += us
    if not n_rows and devices:
        raise WorkloadFileError(source, f"column '{DEVICE}'", f"device {device} among the rows",
                                f"devices {sorted(devices)}")
    if not n_rows:
        raise WorkloadFileError(source, "document", "a header and a row per task", "no rows")
    if not merged:
        got = (f"{n_matmul_rows} MatMul rows, none of a type the kernels take" if n_matmul_rows
               else f"none among {n_rows} rows (OP Type N/A? collect with --task-time=l1)")
        raise WorkloadFileError(source, f"column '{OP_TYPE}'", "at least one MatMul-type "
                                f"operator ({', '.join(sorted(GEMM_OP_TYPES)[:4])}, ...)", got)
    gemms, profiled = [], []
    for (m, k, n, dtype), (calls, us) in merged.items():
        gemms.append(Gemm(m, k, n, dtype, f"gemm_{m}x{k}x{n}_{dtype}",
                          max(1, round(calls / steps))))
        profiled.append(us / calls)
    return ProfiledStep(tuple(gemms), tuple(profiled), other / steps, comm / steps,
                        untuned / steps)


def step_from_document(doc: Any, source: str) -> ProfiledStep:
    """A :class:`ProfiledStep` from its canonical form (a stored study's workload)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("gemms"), list):
        raise WorkloadFileError(source, "document", "an object with gemms, other_us",
                                shown(doc))
    unknown = sorted(set(doc) - {"gemms", "other_us", "comm_us", "untuned_us"})
    if unknown:
        raise WorkloadFileError(source, f"key '{unknown[0]}'", "one of the keys gemms, "
                                "other_us, comm_us, untuned_us", "an unknown key")
    times = {}
    for key in ("other_us", "comm_us", "untuned_us"):
        value = doc.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not 0 <= value < math.inf:
            raise WorkloadFileError(source, f"key '{key}'", "a finite time in us, at least 0",
                                    shown(value))
        times[key] = float(value)
    rows, profiled = [], []
    for i, row in enumerate(doc["gemms"]):
        if not isinstance(row, Mapping):
            raise WorkloadFileError(source, f"key 'gemms[{i}]'", "an object", shown(row))
        us = row.get("profiled_us")
        if isinstance(us, bool) or not isinstance(us, (int, float)) or not 0 <= us < math.inf:
            raise WorkloadFileError(source, f"key 'gemms[{i}].profiled_us'",
                                    "a finite time in us, at least 0", shown(us))
        rows.append({k: v for k, v in row.items() if k != "profiled_us"})
        profiled.append(float(us))
    gemms = shapes_from_rows(rows, source, "gemms")
    return ProfiledStep(gemms, tuple(profiled), times["other_us"], times["comm_us"],
                        times["untuned_us"])


def profiled_workload(step: ProfiledStep, name: str, tokens_per_step: int = 1) -> Workload:
    """The step as a workload; ``details`` keep the profiled times for comparison."""
    gemm_s = sum(g.count * us for g, us in zip(step.gemms, step.profiled_us, strict=True)) * 1e-6
    details = {"profiled_step_s": gemm_s + step.other_us * 1e-6, "profiled_gemm_s": gemm_s,
               "comm_s": step.comm_us * 1e-6, "untuned_matmul_s": step.untuned_us * 1e-6}
    details.update({f"profiled_s/{g.name}": us * 1e-6
                    for g, us in zip(step.gemms, step.profiled_us, strict=True)})
    return Workload(name=f"{name} (profiled, {len(step.gemms)} shapes)", gemms=step.gemms,
                    tokens_per_step=tokens_per_step, fixed_s=step.other_us * 1e-6,
                    details=details)


# ----------------------------------------------------------------- rows
def _lowest_device(rows: CsvRows, source: str) -> int:
    """The lowest Device_id of the profile (a first pass over the file: every id checked)."""
    lowest: int | None = None
    for line, row in rows:
        found = _device_id(row, source, line)
        lowest = found if lowest is None else min(lowest, found)
    if lowest is None:
        raise WorkloadFileError(source, "document", "a header and a row per task", "no rows")
    return lowest


def _device_id(row: Row, source: str, line: int) -> int:
    text = (row.get(DEVICE) or "").strip()
    try:
        return int(text)
    except ValueError:
        raise WorkloadFileError(source, f"line {line}, column '{DEVICE}'", "a device id",
                                shown(text)) from None


def _duration(text: str | None, source: str, line: int) -> float:
    try:
        us = float((text or "").strip())
    except ValueError:
        us = math.nan
    if not 0 <= us < math.inf:
        raise WorkloadFileError(source, f"line {line}, column '{DURATION}'",
                                "a duration in us, at least 0", shown(text))
    return us


def _row_gemm(op: str, row: Row, source: str,
              line: int) -> tuple[tuple[int, int, int, str], int] | None:
    """((M, K, N, dtype), GEMMs in the task) of a MatMul row; None for an untuned type."""
    def fail(column: str, expected: str, got: Any) -> WorkloadFileError:
        return WorkloadFileError(source, f"line {line}, column '{column}'", expected,
                                 shown(got))

    types = _split(row.get(INPUT_TYPES))
    if len(types) < 2:
        raise fail(INPUT_TYPES, "the types of two inputs (e.g. FLOAT16;FLOAT16)",
                   row.get(INPUT_TYPES))
    names = [dtype_name(t) for t in types[:2]]
    for t, name in zip(types[:2], names, strict=True):
        if name is None and not is_known_untuned(t):
            raise fail(INPUT_TYPES, f"element types {ACCEPTED}", t)
    if names[0] is None or names[0] != names[1]:
        return None  # mixed (weight-only quantized) or a type no kernel here takes
    shapes = [_dims(s, fail) for s in _split(row.get(INPUT_SHAPES))]
    formats = _split(row.get(INPUT_FORMATS)) + ["ND", "ND"]
    outs = [_dims(s, fail) for s in _split(row.get(OUTPUT_SHAPES))]
    if len(shapes) < 2 or len(shapes[0]) < 2 or len(shapes[1]) < 2:
        raise fail(INPUT_SHAPES, "two matrix inputs such as 16,3584;4608,3584",
                   row.get(INPUT_SHAPES))
    if not outs or len(outs[0]) < 2:
        raise fail(OUTPUT_SHAPES, "the output matrix's shape such as 16,4608",
                   row.get(OUTPUT_SHAPES))
    out_nz = _is_nz(_split(row.get(OUTPUT_FORMATS)) or ["ND"])
    out = _nd(outs[0], out_nz)
    a_nz, b_nz = _is_nz(formats[:1]), _is_nz(formats[1:2])
    a, b = _nd(shapes[0], a_nz), _nd(shapes[1], b_nz)
    m_rows, n = out[-2], out[-1]
    k = _other(a[-2:], m_rows, a_nz or out_nz)
    if k is None:
        raise fail(INPUT_SHAPES, f"a first input holding the output's M = {m_rows}",
                   row.get(INPUT_SHAPES))
    if a_nz and not b_nz:  # take the unpadded K from the ND weight
        k = _other(b[-2:], n, out_nz) or k
    if not (_has(b[-2:], k, n, b_nz or a_nz or out_nz)):
        raise fail(INPUT_SHAPES, f"a second input holding K = {k} and the output's N = {n}",
                   row.get(INPUT_SHAPES))
    lead, b_batch = math.prod(out[:-2]), math.prod(b[:-2])
    if op == "GroupedMatmul" and b_batch > 1:  # experts: the rows split over the groups
        m, count = math.ceil(lead * m_rows / b_batch), b_batch
    elif b_batch > 1:  # one GEMM per batch entry
        m, count = m_rows, lead
    else:  # a 2-D weight: leading dimensions are more rows
        m, count = lead * m_rows, 1
    for dim, value in (("M", m), ("K", k), ("N", n)):
        if not 1 <= value <= MAX_DIM:
            raise fail(INPUT_SHAPES, f"{dim} from 1 to {MAX_DIM:,}", value)
    return (m, k, n, names[0]), count


def _split(text: str | None) -> list[str]:
    text = (text or "").strip().strip('"')
    return [] if text in ("", "N/A") else [p.strip() for p in text.split(";")]


def _dims(text: str, fail: Any) -> tuple[int, ...]:
    text = text.strip().strip("[]()")
    if not text:
        return ()
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise fail(INPUT_SHAPES, "dimensions as integers separated by ','", text) from None
    if any(d < 0 for d in dims):
        raise fail(INPUT_SHAPES, "dimensions of at least 0", text)
    return dims


def _is_nz(formats: list[str]) -> bool:
    return bool(formats) and formats[0].upper().startswith("FRACTAL_NZ")


def _nd(dims: tuple[int, ...], nz: bool) -> tuple[int, ...]:
    """The ND shape of a FRACTAL_NZ tensor (..., n1, m1, m0, n0) -> (..., m1*m0, n1*n0)."""
    if not nz or len(dims) < 4:
        return dims
    *lead, n1, m1, m0, n0 = dims
    return (*lead, m1 * m0, n1 * n0)


def _fits(dim: int, want: int, padded: bool) -> bool:
    return dim == want or (padded and want < dim < want + NZ_SLACK)


def _other(pair: tuple[int, ...], want: int, padded: bool) -> int | None:
    """The dimension of ``pair`` that is not ``want`` (a matrix stored either way round)."""
    if _fits(pair[0], want, padded):
        return pair[1]
    if _fits(pair[1], want, padded):
        return pair[0]
    return None


def _has(pair: tuple[int, ...], k: int, n: int, padded: bool) -> bool:
    return ((_fits(pair[0], k, padded) and _fits(pair[1], n, padded))
            or (_fits(pair[0], n, padded) and _fits(pair[1], k, padded)))
