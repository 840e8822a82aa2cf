"""A measured attention or vector kernel's row: its op and shape as the problem the
simulator times.

A plain timings row names the kernel by its knowledge base op (``prefill_attention``,
``decode_attention``, ``mla_decode_attention``, ``rmsnorm``, ``add_rmsnorm``,
``swiglu``, ``rope``, ``add``, ``moe_gating``) and its shape as the problem's fields,
``name=value`` pairs: ``batch=1;q_heads=28;kv_heads=4;head_dim=128;seq_len=4096``
for attention, ``rows=4096;width=3584`` for a vector kernel (its output row's width:
SwiGLU's half), ``rows=4096;experts=128;top_k=8`` for the MoE gating. A field the
problem leaves at a default may be left out (``causal`` is 1, ``page_tokens`` 128).
The dtype column gives the element type. The model of the row is the library kernel
a deployment calls (the problem's ``default`` charge).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.layer_problem import LayerProblem
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.moe_gating import MoeGating
from aoe_optuna.workload.vector_ops import KINDS as VECTOR_KINDS
from aoe_optuna.workload.vector_ops import VectorOp

ATTENTION: dict[str, type] = {"decode_attention": DecodeAttention,
                              "prefill_attention": PrefillAttention,
                              "mla_decode_attention": MlaDecodeAttention}
DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1}
TEXT_FIELDS = ("kv_layout",)  # the one field that is a name, not a number
Fail = Callable[[str, Any], Exception]


def layer_ops() -> tuple[str, ...]:
    """The ops a row may name, attention first."""
    return (*ATTENTION, *VECTOR_KINDS, "moe_gating")


def layer_problem(op: str, shape: Any, dtype: str, fail: Fail) -> LayerProblem:
    """The problem of a row of ``op`` with ``shape`` (``name=value;...``) and ``dtype``;
    ``fail(expected, got)`` makes the error that names the row's shape column."""
    cls, fixed = _class_of(op, dtype)
    allowed = [f.name for f in dataclasses.fields(cls) if f.name not in fixed]
    required = [f.name for f in dataclasses.fields(cls) if f.name not in fixed
                and f.default is dataclasses.MISSING]
    expected = (f"{op}'s fields as name=value pairs: {', '.join(required)}"
                + (f" (optional: {', '.join(n for n in allowed if n not in required)})"
                   if len(allowed) > len(required) else ""))
    fields = _pairs(shape, lambda got: fail(expected, got))
    unknown = [k for k in fields if k not in allowed]
    missing = [k for k in required if k not in fields]
    if unknown or missing:
        raise fail(expected, f"{'no field ' + missing[0] if missing else unknown[0]} in "
                   f"{shape!r}")
    try:
        values = {k: _value(k, v) for k, v in fields.items()}
        return cls(**fixed, **values)  # type: ignore[no-any-return]
    except (TypeError, ValueError) as exc:
        raise fail(expected, f"{shape!r} ({exc})") from None


def _class_of(op: str, dtype: str) -> tuple[type, dict[str, Any]]:
    if op in ATTENTION:
        return ATTENTION[op], {"dtype_bytes": DTYPE_BYTES[dtype]}
    if op == "moe_gating":
        return MoeGating, {"dtype": dtype}
    return VectorOp, {"kind": op, "dtype": dtype}


def _pairs(shape: Any, fail: Callable[[Any], Exception]) -> dict[str, str]:
    if not isinstance(shape, str) or "=" not in shape:
        raise fail(shape)
    out: dict[str, str] = {}
    for part in (p for p in shape.replace(",", ";").split(";") if p.strip()):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or name.strip() in out:
            raise fail(shape)
        out[name.strip()] = value.strip()
    return out


def _value(name: str, text: str) -> Any:
    if name in TEXT_FIELDS:
        return text
    if name == "causal":
        if text.lower() in ("1", "true"):
            return True
        if text.lower() in ("0", "false"):
            return False
        raise ValueError(f"causal: expected 1 or 0, got {text!r}")
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{name}: expected a whole number from 1, got {text!r}")
    return int(text)
