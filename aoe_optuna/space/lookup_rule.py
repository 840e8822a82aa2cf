"""A whole list of a kernel's rules as one constraint, by a cached lookup per config.

The attention spaces' rules are plain Python over one tiling (buffer
capacities, nesting, alignment), not column arithmetic; their spaces hold at
most a few ten thousand tilings, so each distinct row is judged once and then
looked up, which keeps the constraint vectorised for the samplers' scoring.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from aoe_optuna.space.constraints import Columns

Row = tuple[int, ...]  # a config's values in field order (a category as its index)


class LookupRule:
    """0 for a feasible row, else the number of rules it breaks; ``describe`` names them."""

    def __init__(self, name: str, fields: Sequence[str],
                 violations_of: Callable[[Row], list[str]]) -> None:
        self.name = name
        self.fields = tuple(fields)
        self.variables = frozenset(fields)
        self._violations_of = violations_of
        self._broken: dict[Row, int] = {}

    def _count(self, row: Row) -> int:
        n = self._broken.get(row)
        if n is None:
            n = len(self._violations_of(row))
            self._broken[row] = n
        return n

    def violation(self, columns: Columns) -> np.ndarray:
        rows = np.stack([np.asarray(columns[f], dtype=np.int64) for f in self.fields], axis=-1)
        return np.array([self._count(tuple(int(v) for v in r)) for r in rows], dtype=float)

    def describe(self, columns: Columns) -> str:
        row = tuple(int(np.asarray(columns[f]).ravel()[0]) for f in self.fields)
        return "; ".join(self._violations_of(row))
