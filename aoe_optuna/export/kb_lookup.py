"""Finding a config in the knowledge base: a GEMM shape's exact or nearest entry, and
an attention or vector kernel's exact problem.

A shape that was never tuned gets the entry of the nearest tuned shape of the
same SoC, op and dtype, nearness being the Euclidean distance between
(log2 M, log2 K, log2 N): doubling a dimension costs 1 whatever its size. The C
lookup of :mod:`aoe_optuna.export.kb_c_header` ranks entries the same way.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import (
    KBError,
    _is_dim,
    describe_key,
    entry_key,
    is_gemm_entry,
    problem_text,
)
from aoe_optuna.kb_file import shape_sq_distance
from aoe_optuna.space.params import LAYOUTS
from aoe_optuna.workload.gemm import MAX_DIM

TIE_SCALE = 1048576.0  # 2**20: squared log2 distances are compared on this grid


@dataclass(frozen=True)
class LookupResult:
    """The entry chosen for a shape: the exact one, or the nearest one and how near."""

    entry: dict[str, Any]
    exact: bool
    distance: float  # Euclidean distance in (log2 M, log2 K, log2 N); 0 when exact
    in_range: bool = False  # a kernel set's kernel whose range of M holds the query

    @property
    def config(self) -> dict[str, Any]:
        return self.entry["config"]

    def describe(self) -> str:
        key = describe_key(entry_key(self.entry))
        if self.in_range:
            low, high = self.entry["m_range"]
            return f"kernel set entry {key} (its range M {low}..{high})"
        return f"exact entry {key}" if self.exact else (
            f"nearest entry {key} (distance {self.distance:.3f} in log2 shape)")


def lookup(
    kb_or_path: KnowledgeBase | str | os.PathLike[str],
    soc: str,
    op: str,
    dtype: str,
    M: int,  # noqa: N803
    K: int,  # noqa: N803
    N: int,  # noqa: N803
    layout: str | None = None,
) -> LookupResult | None:
    """The entry for this shape, or the nearest shape's; None when nothing fits.

    Candidates share ``soc``, ``op``, ``dtype`` (and ``layout`` unless it is None).
    A kernel set's kernel of the same K and N whose range of M (``m_range``) holds M
    comes first (of two such, the higher value, then the first in order). Otherwise
    the nearest minimises the squared distance in (log2 M, log2 K, log2 N), rounded
    to a 2**-20 grid so that equal distances tie whatever the last bit of log2; ties
    go to the higher value, then to the smaller (M, K, N, layout). The C lookup of
    :func:`write_c_header` implements the same order.
    """
    kb = kb_or_path if isinstance(kb_or_path, KnowledgeBase) else KnowledgeBase.load(kb_or_path)
    for dim, v in (("M", M), ("K", K), ("N", N)):
        if not _is_dim(v):
            raise KBError(f"lookup: {dim}: expected an integer from 1 to {MAX_DIM}, got {v!r}")
    if layout is not None and layout not in LAYOUTS:
        raise KBError(f"lookup: layout: expected one of {list(LAYOUTS)} or None, got {layout!r}")
    best: tuple[tuple[Any, ...], dict[str, Any], float] | None = None
    for entry in kb.entries():
        if not is_gemm_entry(entry) or (entry["soc"], entry["op"], entry["dtype"]) != (
                soc, op, dtype):
            continue
        if layout is not None and entry["layout"] != layout:
            continue
        d2 = shape_sq_distance((M, K, N), (entry["M"], entry["K"], entry["N"]))
        hit = _holds(entry, M, K, N)
        rank = (0, 0.0, -entry["value"], 0.0) if hit else (
            1, _tie_bucket(d2), -entry["value"], d2)
        if best is None or rank < best[0]:  # entries() is sorted: the first of equals wins
            best = (rank, entry, d2)
    if best is None:
        return None
    rank, entry, d2 = best
    exact = (entry["M"], entry["K"], entry["N"]) == (M, K, N)
    return LookupResult(entry, exact, 0.0 if exact else math.sqrt(d2), in_range=rank[0] == 0)


def _holds(entry: Mapping[str, Any], m: int, k: int, n: int) -> bool:
    """A kernel set's kernel for this K and N whose range of M holds ``m``."""
    span = entry.get("m_range")
    return span is not None and entry["K"] == k and entry["N"] == n and span[0] <= m <= span[1]


def lookup_layer_op(kb_or_path: KnowledgeBase | str | os.PathLike[str], soc: str, op: str,
                    dtype: str, problem: Mapping[str, Any]) -> dict[str, Any] | None:
    """The attention or vector kernel entry of exactly this problem, or None.

    No nearest match: a tiling of another problem (another context's KV split,
    another width's tile) is not a safe guess for this one.
    """
    kb = kb_or_path if isinstance(kb_or_path, KnowledgeBase) else KnowledgeBase.load(kb_or_path)
    return kb.get((soc, op, dtype, problem_text(problem)))


def _tie_bucket(d2: float) -> float:
    """Squared distances closer than 2**-20 are a tie (rounding noise of log2 and FMA)."""
    return math.floor(d2 * TIE_SCALE + 0.5)

