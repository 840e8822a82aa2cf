"""The search space of a plain Optuna study: the distributions its trials used.

Without a spec there are no constraint rules and no declared parameters, so
the space is the cartesian product of the distributions every finished trial
suggested (Optuna's intersection search space): int, log-int and categorical
as their choices, float, log-float and stepped float as a grid of values
(:mod:`aoe_optuna.samplers.value_grid`), and, where asked, an int distribution
with more values than that grid as a grid of ints. The study's own distributions are
kept beside it: they are what the sampler reports as its relative search
space, so a log-int stays log and a float stays a float for Optuna.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.study import Study
from optuna.trial import TrialState

from aoe_optuna.samplers.value_grid import float_grid, int_grid
from aoe_optuna.space.params import Param, ParamError
from aoe_optuna.space.search_space import SearchSpace

_FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)


@dataclass(frozen=True)
class PlainParam(Param):
    """A parameter of a plain study: its values are taken as they are, whatever its name.

    ``Param`` spells the values of the GEMM tunables it knows canonically
    ("layout" takes row_major/col_major/z_major, "pipeline" 0/1/2); a plain
    study's "layout" may be any strings, so here no name is special.
    """

    def code(self, value: Any) -> int | float:
        if self.kind in ("int", "real"):
            return value
        if self.kind == "bool":
            return int(bool(value))
        return self.choices.index(value)

    def index(self, value: Any) -> int:
        try:
            return self.choices.index(value)
        except ValueError:
            raise ParamError(
                f"{self.name}={value!r} is not one of its choices {list(self.choices)}"
            ) from None


@dataclass(frozen=True)
class PlainSpace:
    """A plain study's space as a SearchSpace, and the distributions it stands for."""

    space: SearchSpace
    distributions: dict[str, BaseDistribution]


def param_of(
    name: str, dist: BaseDistribution, float_points: int, int_points: int | None = None
) -> Param | None:
    """The choices standing for one distribution (None for one that has none).

    ``int_points``: None keeps every value of an int distribution; a number makes
    a wider one a grid of that many ints.
    """
    if isinstance(dist, FloatDistribution):
        return PlainParam(name, float_grid(dist, float_points), "real")
    if isinstance(dist, IntDistribution):
        if int_points is not None:
            return PlainParam.generic(name, int_grid(dist, int_points))
        return PlainParam.generic(name, range(dist.low, dist.high + 1, dist.step))
    if isinstance(dist, CategoricalDistribution):
        return PlainParam.generic(name, dist.choices)
    return None


class PlainSpaces:
    """Infers a plain study's space, one SearchSpace object per distinct set of choices.

    The same object comes back while the study's distributions stay the same,
    so callers can key caches (candidate sets, masks, a policy) on it.
    """

    def __init__(self, float_points: int, int_points: int | None = None) -> None:
        self.float_points = float_points
        self.int_points = int_points
        self._known: dict[Any, PlainSpace] = {}

    def __call__(self, study: Study) -> PlainSpace | None:
        """The space of ``study``'s finished trials; None before any trial suggested a value."""
        trials = study.get_trials(deepcopy=False, states=_FINISHED)
        dists = optuna.search_space.intersection_search_space(trials, include_pruned=True)
        params = [
            p for name, d in sorted(dists.items())
            if (p := param_of(name, d, self.float_points, self.int_points)) is not None
        ]
        if not params:
            return None
        key = tuple((p.name, p.choices) for p in params)
        if key not in self._known:
            self._known[key] = PlainSpace(
                SearchSpace(params), {p.name: dists[p.name] for p in params}
            )
        return self._known[key]
