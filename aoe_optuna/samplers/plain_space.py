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

from dataclasses import dataclass, field
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.study import Study
from optuna.trial import TrialState

from aoe_optuna.samplers.storage_cache import StorageCache
from aoe_optuna.samplers.value_grid import float_grid, int_grid
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace

_FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)


@dataclass(frozen=True)
class PlainParam(Param):
    """A parameter of a plain study: its values are taken as they are, whatever its name.

    ``Param`` spells the values of the GEMM tunables it knows canonically
    ("layout" takes row_major/col_major/z_major, "pipeline" 0/1/2); a plain
    study's "layout" may be any strings, so here no name is special.
    """

    @property
    def spelled_canonically(self) -> bool:
        return False


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


@dataclass
class _Folded:
    """One study's intersection so far and the trials already folded into it."""

    trial_ids: set[int] = field(default_factory=set)
    space: dict[str, BaseDistribution] | None = None


class PlainSpaces:
    """Infers a plain study's space, one SearchSpace object per distinct set of choices.

    The same object comes back while the study's distributions stay the same,
    so callers can key caches (candidate sets, masks, a policy) on it.
    """

    def __init__(self, float_points: int, int_points: int | None = None) -> None:
        self.float_points = float_points
        self.int_points = int_points
        self._known: dict[Any, PlainSpace] = {}
        self._folded: StorageCache[dict[int, _Folded]] = StorageCache()

    def _intersection(self, study: Study) -> dict[str, BaseDistribution]:
        """Optuna's intersection search space of the finished trials, folded in as they finish.

        The same as ``intersection_search_space`` over all of them (an intersection
        only shrinks, in any order), but each trial is compared once per study
        instead of on every call: at 1000 trials that was 20,000 distribution
        comparisons per suggestion. Trials are told apart by their storage id,
        which a storage never gives twice.
        """
        folded = self._folded.setdefault(study._storage, {}).setdefault(
            study._study_id, _Folded()
        )
        for t in study.get_trials(deepcopy=False, states=_FINISHED):
            if t._trial_id in folded.trial_ids:
                continue
            folded.trial_ids.add(t._trial_id)
            if t.state == TrialState.FAIL:  # as Optuna's: failed trials do not count
                continue
            if folded.space is None:
                folded.space = dict(t.distributions)
            else:
                folded.space = {
                    name: d for name, d in folded.space.items() if t.distributions.get(name) == d
                }
        return dict(sorted((folded.space or {}).items()))

    def __call__(self, study: Study) -> PlainSpace | None:
        """The space of ``study``'s finished trials; None before any trial suggested a value."""
        dists = self._intersection(study)
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
