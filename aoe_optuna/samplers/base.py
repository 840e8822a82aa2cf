"""What GPUCBSampler and ReinforceSampler share as Optuna samplers.

Both draw their seed by one rule, hand a parameter outside their space to a
seeded RandomSampler, record ``constraints_func``'s values as Optuna's own
samplers do, read a study's space from the spec aoe-tune stored in it, and
report their relative search space by one rule (a plain study's own
distributions, else the space's).
Neither reads anything else from that spec: the workload and SoC that shape
their models are passed in (``from_spec``), and a GEMM tiling space without
them is said once, in one warning line.
"""

from __future__ import annotations

import abc
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.samplers._base import _process_constraints_after_trial
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.samplers.plain_space import PlainSpace
from aoe_optuna.samplers.seeding import resolve_seed
from aoe_optuna.space.params import TILE_NAMES
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.stored import space_from_study

_log = logging.getLogger(__name__)

ConstraintsFunc = Callable[[FrozenTrial], Sequence[float]]
_Method = TypeVar("_Method", bound=Callable[..., Any])


def serialized(method: _Method) -> _Method:
    """Run ``method`` under the sampler's lock: ``optimize(n_jobs=k)`` calls one sampler
    from k threads, and its caches (space, policy, GP history) are built lazily."""

    @functools.wraps(method)
    def locked(self: ConstrainedSampler, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]


class ConstrainedSampler(BaseSampler):
    """The seed, the independent sampler, the constraints bookkeeping and the stored space."""

    def __init__(self, owner: str, seed: int | None,
                 constraints_func: ConstraintsFunc | None) -> None:
        self._owner = owner
        self._seed = resolve_seed(seed, owner)
        self._independent = RandomSampler(seed=self._seed)
        self._constraints_func = constraints_func
        self._stored: dict[tuple[int, int], SearchSpace] = {}
        self._warned = False
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]  # a lock does not pickle; a copy gets its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def _stored_space(self, study: Study) -> SearchSpace | None:
        """The space of the spec stored in ``study`` (None for a plain Optuna study)."""
        key = (id(study._storage), study._study_id)
        if key not in self._stored:
            space = space_from_study(study)
            if space is None:
                return None
            self._stored[key] = space
        return self._stored[key]

    @abc.abstractmethod
    def _space_for(self, study: Study) -> SearchSpace | None:
        """The space searched in ``study``: given, stored, or inferred (None before a
        plain study's first finished trial)."""

    @abc.abstractmethod
    def _plain_space(self, study: Study) -> PlainSpace | None:
        """The space inferred from a plain study's trials (None where none is)."""

    def _plain_distributions(
        self, study: Study, space: SearchSpace
    ) -> dict[str, BaseDistribution] | None:
        """The study's own distributions where ``space`` was inferred from them."""
        plain = self._plain_space(study)
        return plain.distributions if plain is not None and plain.space is space else None

    @serialized
    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        """The space's distributions; a plain study's own where its space was inferred from
        them, so a log-int stays log and a float stays a float for Optuna."""
        space = self._space_for(study)
        if space is None:
            return {}
        return self._plain_distributions(study, space) or space.distributions()

    def _warn_without_workload(self, space: SearchSpace, what: str) -> None:
        """Say once that a GEMM tiling space runs without the workload's ``what``."""
        if self._warned or not is_gemm_tiling(space):
            return
        self._warned = True
        _log.warning("%s: no workload and SoC profile given, so %s are off; pass workload= "
                     "and profile= (%s.from_spec(spec) does, as aoe-tune does)",
                     self._owner, what, self._owner)

    def reseed_rng(self) -> None:
        self._independent.reseed_rng()

    def after_trial(
        self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        if self._constraints_func is not None:
            _process_constraints_after_trial(self._constraints_func, study, trial, state)


def is_gemm_tiling(space: SearchSpace) -> bool:
    """Whether ``space`` tunes a GEMM tile (the tile sizes are known, some of them tuned)."""
    known = set(space.names) | set(space.fixed)
    return set(TILE_NAMES) <= known and bool(set(TILE_NAMES) & set(space.names))

