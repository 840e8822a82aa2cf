"""A value a kernel's renderer refuses, as a rule of the space.

The chip's rules (:mod:`aoe_optuna.hardware.capacity`) say what fits an AI core; a
kernel's rules say what the kernel a study exports to has at all (catlass's
split-K kernel has no Preload variant, the simple kernel no int8 path). Written
as rules, they keep the samplers from proposing a config whose export would be
refused after the study. A :class:`KernelRule` is not a user constraint: it has
no expression text, so a spec's canonical form (its ``constraints``) never holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aoe_optuna.space.constraints import Columns, Rule
from aoe_optuna.space.params import KNOWN_PARAMS, Param, to_code

# Past this many combinations of a rule's variables, whether the space can break it
# is not checked (the rule is kept).
MAX_CHECKED = 2_000_000


@dataclass(frozen=True)
class KernelRule:
    """``holds(columns)`` is true where the kernel exists; ``why`` names the kernel that
    lacks the rest and the source that says so."""

    name: str
    variables: frozenset[str]
    holds: Callable[[Columns], np.ndarray]
    why: str

    def violation(self, columns: Columns) -> np.ndarray:
        ok = np.asarray(self.holds(columns), dtype=bool)
        return np.where(np.broadcast_to(ok, (_length(columns),)), 0.0, 1.0)

    def describe(self, columns: Columns) -> str:
        values = ", ".join(f"{v}={_shown(v, columns[v])}" for v in sorted(self.variables)
                           if v in columns)
        return f"{self.name}: {values}: {self.why}"


def _shown(name: str, column: Any) -> Any:
    """The value of a one-config column as a user writes it (a layout's name, not its code)."""
    code = np.asarray(column).ravel()[0]
    info = KNOWN_PARAMS.get(name)
    if info is not None and info.names and info.kind == "categorical":
        return info.names[int(code)]
    return code.item() if hasattr(code, "item") else code


def _length(columns: Columns) -> int:
    for col in columns.values():
        return int(np.asarray(col).shape[0]) if np.ndim(col) else 1
    return 1


def breakable(rules: Iterable[Rule], params: Iterable[Param],
              fixed: Mapping[str, Any]) -> list[Rule]:
    """The rules some combination of the space's values breaks. A rule no config of the
    space can break changes no count and no sample; leaving it out keeps the parameters
    it reads free (the feasible set is enumerated over the constrained ones only)."""
    choices = {p.name: np.asarray(p.codes) for p in params}
    out = []
    for rule in rules:
        columns = {}
        for name in rule.variables:
            if name in choices:
                columns[name] = choices[name]
            elif name in fixed:
                value = fixed[name]
                columns[name] = np.asarray([to_code(name, value) if name in KNOWN_PARAMS
                                            else value])
            else:  # unknown here: keep the rule, the space reports it
                columns = None
                break
        if columns is None or not _always_holds(rule, columns):
            out.append(rule)
    return out


def _always_holds(rule: Rule, values: dict[str, np.ndarray]) -> bool:
    sizes = [len(v) for v in values.values()]
    if int(np.prod(sizes, dtype=np.int64)) > MAX_CHECKED:
        return False
    names = list(values)
    if not names:
        return False
    flat = np.arange(int(np.prod(sizes, dtype=np.int64)), dtype=np.int64)
    grid = np.unravel_index(flat, sizes)
    columns = {n: values[n][grid[i]] for i, n in enumerate(names)}
    return bool(np.all(np.asarray(rule.violation(columns)) <= 0))
