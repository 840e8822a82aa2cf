"""The knowledge base's file: its format marker, its raw entries, a GEMM's op name, and
how near two GEMM shapes lie.

Read here, below every layer that reads a knowledge base: the export validates each
entry against the op's space (:mod:`aoe_optuna.export.kb_entry`), and a study whose
prior is a knowledge base (``spec.prior``) takes its entries' configs as they are,
each checked against its own space.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

FORMAT = "aoe-kb"
VERSION = 1


class KBFileError(ValueError):
    """A file that is not a knowledge base this version reads; one line naming it."""


def read_entries(path: str | os.PathLike[str], *, missing_ok: bool = True
                 ) -> list[Any]:
    """The file's entries as stored (each still to be validated); none when the file
    does not exist and ``missing_ok``."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return []
        raise KBFileError(f"{path}: does not exist; expected a knowledge base") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KBFileError(f"{path}: cannot read the knowledge base: {exc}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise KBFileError(f"{path}: not a knowledge base (invalid JSON: {exc.msg} at line "
                          f"{exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise KBFileError(f"{path}: not a knowledge base (arrays or objects nested too "
                          "deeply)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise KBFileError(f"{path}: not a knowledge base (expected an object with "
                          f"\"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise KBFileError(f"{path}: version: expected {VERSION}, got {data.get('version')!r}")
    if not isinstance(data.get("entries"), list):
        raise KBFileError(f"{path}: entries: expected a list")
    return data["entries"]


def shape_sq_distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """The squared distance of two (M, K, N) in (log2 M, log2 K, log2 N): doubling a
    dimension costs 1 whatever its size (the lookup's nearest entry, a KB prior's)."""
    total = 0.0
    for x, y in zip(a, b, strict=True):
        d = math.log2(x) - math.log2(y)
        total += d * d
    return total


def gemm_kb_op(op_name: str, batch: int) -> str:
    """The KB's op of a GEMM: a batched launch is another kernel (catlass's
    BatchedMatmul), so its entries live under ``<op>-batch<n>`` and never answer a
    single GEMM's lookup."""
    return op_name if batch == 1 else f"{op_name}-batch{batch}"
