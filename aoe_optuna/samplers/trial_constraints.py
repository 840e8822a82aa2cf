"""Whether a trial broke one of the study's constraints, as Optuna records them.

Optuna keeps a trial's constraint values in its system attributes: the list
``constraints_func`` returns (under ``"constraints"``) and one value per
``Trial.set_constraint`` key (``"constraints:<key>"``). A trial is feasible
when every value is zero or less; one with no values is feasible.
"""

from __future__ import annotations

from typing import Any

from optuna.trial import FrozenTrial

from aoe_optuna.attrs import OPTUNA_CONSTRAINTS_KEY


def constraint_values(trial: FrozenTrial) -> list[float]:
    """Every constraint value recorded for ``trial`` (both forms), in no particular order."""
    values: Any = (getattr(trial, "constraints", None)
                   or trial.system_attrs.get(OPTUNA_CONSTRAINTS_KEY))
    if isinstance(values, dict):
        values = list(values.values())
    return [float(c) for c in values or ()]


def breaks_a_constraint(trial: FrozenTrial) -> bool:
    """Whether some recorded constraint value of ``trial`` is above zero."""
    return any(c > 0 for c in constraint_values(trial))
