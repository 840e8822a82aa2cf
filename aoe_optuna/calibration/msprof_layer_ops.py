"""The attention and vector kernels of an msprof op_summary as calibration rows.

A profile of a model run holds, beside its MatMuls, CANN's attention and vector
kernels by their operator type; each task becomes one row of its kernel family
(:mod:`.families`), the same kernel timed many times being one kernel at the median
of its tasks (:mod:`.kernels`). The types taken and how their shapes are read (the
op_summary has each input's shape, ``;`` between inputs, no attributes):

* ``RmsNorm`` (x; gamma) and ``AddRmsNorm`` (x1; x2; gamma): rows are x's leading
  dimensions, width its last;
* ``SwiGlu`` (x): split on its last dimension (the operator's default), rows its
  leading dimensions, width half the last;
* ``PromptFlashAttention`` and ``FusedInferAttentionScore`` with more than one query
  token, ``FlashAttentionScore`` (query; key; value; ...): prefill attention,
  causal, over 4-D BNSD or BSND query and key, their layout told apart as the one
  under which the query's heads are a multiple of the key's, then whose keys are at
  least its queries, then with fewer heads (MHA with one length reads the larger
  dimension as the sequence);
* ``IncreFlashAttention`` and ``FusedInferAttentionScore`` with one query token:
  decode attention over a contiguous 4-D cache;
* ``MoeGatingTopKSoftmax`` (x): rows and experts from x, top k from its output.

Other tasks (MatMuls: :func:`.timings.read_msprof_timings`; copies, communication) are
not rows here. A task of a taken type whose shapes cannot be read as above (a 3-D BSH
query, whose heads the profile does not say; a paged cache) is refused in one line
naming the file and line: its time belongs to a kernel the row cannot name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from aoe_optuna.calibration.timings import TimedKernel
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.layer_problem import LayerProblem
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.csv_rows import CsvRows, Row
from aoe_optuna.workload.dtypes import dtype_name
from aoe_optuna.workload.files import WorkloadFileError, checked_file, shown
from aoe_optuna.workload.moe_gating import MoeGating
from aoe_optuna.workload.msprof import DURATION, INPUT_SHAPES, INPUT_TYPES, OP_TYPE, OUTPUT_SHAPES
from aoe_optuna.workload.read_progress import ReadProgress
from aoe_optuna.workload.vector_ops import VectorOp

WHAT = "an msprof op_summary CSV"
NORMS = {"RmsNorm": "rmsnorm", "AddRmsNorm": "add_rmsnorm"}
PREFILL = frozenset({"PromptFlashAttention", "FlashAttentionScore"})
DECODE = frozenset({"IncreFlashAttention"})
FUSED = "FusedInferAttentionScore"
LAYER_OP_TYPES = frozenset({*NORMS, "SwiGlu", *PREFILL, *DECODE, FUSED,
                            "MoeGatingTopKSoftmax"})
Fail = Callable[[str, str, Any], WorkloadFileError]


def read_msprof_layer_rows(path: str | Path) -> Iterator[TimedKernel]:
    """Each task of a taken type in the op_summary at ``path``, as a calibration row."""
    source = str(path)
    rows = CsvRows(checked_file(path, WHAT), source)
    missing = [c for c in (OP_TYPE, DURATION, INPUT_SHAPES, INPUT_TYPES) if c not in rows.header]
    if missing:
        raise WorkloadFileError(source, "line 1", f"{WHAT} header with the columns {OP_TYPE}, "
                                f"{DURATION}, {INPUT_SHAPES}, {INPUT_TYPES}",
                                f"no column '{missing[0]}'")
    progress = ReadProgress(rows, "tasks", lambda: 0)
    for line, row in rows:
        progress.tick(line)
        op = (row.get(OP_TYPE) or "").strip()
        if op not in LAYER_OP_TYPES:
            continue

        def fail(column: str, expected: str, got: Any, line: int = line) -> WorkloadFileError:
            return WorkloadFileError(source, f"line {line}, column '{column}'", expected,
                                     shown(got))

        problem = layer_problem_of(op, row, fail)
        us = _duration(row.get(DURATION), fail)
        yield TimedKernel(f"{source}: line {line} {op}", None, None, us, problem)


def layer_problem_of(op: str, row: Row, fail: Fail) -> LayerProblem:
    """The problem of one task of ``op`` from its shapes and element type."""
    shapes = [_dims(s, fail) for s in _split(row.get(INPUT_SHAPES))]
    types = _split(row.get(INPUT_TYPES))
    dtype = dtype_name(types[0]) if types else None
    if dtype is None or not shapes:
        raise fail(INPUT_TYPES, "the first input's element type (FLOAT16, DT_BF16, FLOAT)",
                   row.get(INPUT_TYPES))
    x = shapes[0]
    if op in NORMS or op == "SwiGlu":
        if len(x) < 1:
            raise fail(INPUT_SHAPES, f"{op}'s input x with at least one dimension",
                       row.get(INPUT_SHAPES))
        rows, width = math.prod(x[:-1]), x[-1]
        if op == "SwiGlu":
            if width % 2:
                raise fail(INPUT_SHAPES, "SwiGlu's x with an even last dimension",
                           row.get(INPUT_SHAPES))
            return VectorOp("swiglu", rows, width // 2, dtype)
        return VectorOp(NORMS[op], rows, width, dtype)
    if op == "MoeGatingTopKSoftmax":
        outs = [_dims(s, fail) for s in _split(row.get(OUTPUT_SHAPES))]
        if len(x) < 2 or not outs or len(outs[0]) < 2:
            raise fail(INPUT_SHAPES, "x as rows x experts and the output's rows x top k",
                       row.get(INPUT_SHAPES))
        return MoeGating(math.prod(x[:-1]), x[-1], outs[0][-1], dtype)
    if len(shapes) < 2 or len(x) != 4 or len(shapes[1]) != 4:
        raise fail(INPUT_SHAPES, f"{op}'s query and key as 4-D BNSD or BSND (a 3-D BSH "
                   "query does not say its heads)", row.get(INPUT_SHAPES))
    return _attention(op, x, shapes[1], 4 if dtype == "fp32" else 2)


def _attention(op: str, q: list[int], k: list[int], dtype_bytes: int) -> LayerProblem:
    """(B, N, S, D) or (B, S, N, D) query and key: the layout under which the query's
    heads are a multiple of the key's (GQA or MHA); where both are, the one whose keys are
    at least its queries (a causal prefill, a decode), then the one with fewer heads
    (head counts stay small, sequences do not)."""
    batch, d = q[0], q[3]
    layouts = [(q[1], k[1], q[2], k[2]), (q[2], k[2], q[1], k[1])]  # BNSD, BSND
    heads, kv_heads, s_q, s_kv = min(layouts, key=lambda x: (
        x[0] % x[1] != 0, x[3] < x[2], x[0]))
    decode = op in DECODE or (op == FUSED and s_q == 1)
    if decode:
        return DecodeAttention(batch=batch, q_heads=heads, kv_heads=kv_heads, head_dim=d,
                               context=s_kv, dtype_bytes=dtype_bytes)
    return PrefillAttention(batch=batch, q_heads=heads, kv_heads=kv_heads, head_dim=d,
                            seq_len=s_q, causal=s_kv >= s_q, dtype_bytes=dtype_bytes,
                            kv_len=s_kv)


def _split(text: str | None) -> list[str]:
    return [p for p in (text or "").replace('"', "").split(";") if p.strip()]


def _dims(text: str, fail: Fail) -> list[int]:
    try:
        dims = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        dims = []
    if not dims or min(dims) < 1:
        raise fail(INPUT_SHAPES, "dimensions such as 1,128,4096", text)
    return dims


def _duration(text: str | None, fail: Fail) -> float:
    try:
        us = float((text or "").strip())
    except ValueError:
        us = math.nan
    if not 0 < us < math.inf:
        raise fail(DURATION, "a duration in us, above 0", text)
    return us
