"""ReinforceSampler: an Optuna sampler whose proposals come from a learned policy.

Each call rebuilds (or catches up) the learner from storage, then draws one
whole config from the policy with infeasible and already-tried choices
masked out, or (a ``local`` share of the calls) makes a small move around
one of the best configs measured so far. Optional start: a policy pretrained
on other shapes and SoCs (:mod:`aoe_optuna.samplers.reinforce.pretrain`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import optuna
import torch
from optuna.distributions import BaseDistribution
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.samplers.claims import FinishedClaims, claim_first_free
from aoe_optuna.samplers.neighbourhood import BallCache
from aoe_optuna.samplers.reinforce._features import (
    FEATURE_NAMES,
    no_features,
    workload_features,
)
from aoe_optuna.samplers.reinforce._learner import (
    LearnerSettings,
    ReinforceLearner,
    learner_settings,
)
from aoe_optuna.samplers.reinforce._local import local_proposal
from aoe_optuna.samplers.reinforce._masking import ChoiceMasker
from aoe_optuna.samplers.reinforce._policy import AutoregressivePolicy
from aoe_optuna.samplers.reinforce._policy_file import load_policy
from aoe_optuna.samplers.reinforce._propose import propose
from aoe_optuna.samplers.reinforce._replay import ObservationCache, ReplayCache, TrialRows
from aoe_optuna.samplers.seeding import resolve_seed
from aoe_optuna.samplers.torch_threads import one_torch_thread as one_thread
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.models import Workload

# The share of proposals that are local moves, with or without a pretrained policy
# (docs/decisions/0006-reinforce-local-moves.md).
LOCAL_SHARE = 0.8
# Without a policy, the first configs are poor and moves around them only climb the
# nearest hill: local moves start once this many measurements exist (the policy's
# draws explore until then). A pretrained policy's first draw is already near the
# optimum, so with one they start after the first measurement.
LOCAL_START_UNTRAINED = 10
CLAIM_ROUNDS = 8  # proposals tried against other workers' claims before giving up
_TRIED_STATES = (
    TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING,
)


def _local_share(local: Any) -> float:
    """The validated share of local proposals."""
    if local is None:
        return LOCAL_SHARE
    if isinstance(local, bool) or not isinstance(local, int | float) or not 0 <= local <= 1:
        raise ValueError(f"ReinforceSampler: local: expected a share in [0, 1], got {local!r}")
    return float(local)


def new_policy(n_shape: Sequence[int], hidden: int, seed: int) -> AutoregressivePolicy:
    """A freshly initialised policy, the same for the same seed in every process."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return AutoregressivePolicy(len(FEATURE_NAMES), n_shape, hidden)


class ReinforceSampler(optuna.samplers.BaseSampler):
    """Policy-gradient sampler over a constrained discrete SearchSpace.

    Args:
        space: the study's SearchSpace; None reads it from the spec stored in the study.
        seed: fixes the initial policy and every draw (draw ``n`` uses ``(seed, n)``).
        policy: path of a pretrained policy file to start from.
        features: the operator feature vector; by default computed from
            ``workload`` and ``profile``, or from the study's stored spec.
        local: the share of proposals that are small moves around the best
            configs measured (:mod:`._local`; a policy draw when no untried config
            is near), from the first measurement with a policy, from the
            ``LOCAL_START_UNTRAINED``-th without; None: ``LOCAL_SHARE`` (0.8);
            0: policy draws only.
        learner: the online learner's settings: a :class:`LearnerSettings`, or a mapping
            of its fields (``{"batch_size": 4}``, as ``--sampler-kwargs`` gives them).
    """

    def __init__(
        self,
        *,
        space: SearchSpace | None = None,
        seed: int | None = None,
        policy: str | None = None,
        features: Sequence[float] | None = None,
        workload: Workload | None = None,
        profile: SocProfile | None = None,
        local: float | None = None,
        learner: LearnerSettings | Mapping[str, Any] | None = None,
    ) -> None:
        self._settings = learner_settings(learner)
        self._local_share = _local_share(local)
        self._local_start = 1 if policy is not None else LOCAL_START_UNTRAINED
        self._seed = resolve_seed(seed, "ReinforceSampler")
        self._space = space
        self._policy_path = policy
        self._features = None if features is None else np.asarray(features, dtype=np.float32)
        if self._features is not None and self._features.shape != (len(FEATURE_NAMES),):
            raise ValueError(f"features: expected {len(FEATURE_NAMES)} numbers ({FEATURE_NAMES})")
        if self._features is None and workload is not None and profile is not None:
            self._features = workload_features(workload, profile)
        self._pretrained: AutoregressivePolicy | None = None
        self._pretrained_info: dict[str, Any] = {}
        self._masker: ChoiceMasker | None = None
        self._balls: BallCache | None = None
        self._cache: ReplayCache | None = None
        self._cache_key: tuple[Any, ...] | None = None
        self._rows: TrialRows | None = None
        self._observations: ObservationCache | None = None
        self._finished: FinishedClaims | None = None
        self._fallback = optuna.samplers.RandomSampler(seed=self._seed)
        if space is not None:
            self._prepare(space)

    # ------------------------------------------------------------- set-up
    def _prepare(self, space: SearchSpace) -> None:
        self._space = space
        self._masker = ChoiceMasker(space)
        self._balls = BallCache(space)
        if self._policy_path is not None:
            self._pretrained, self._pretrained_info = load_policy(self._policy_path, space)

    def _space_for(self, study: Study) -> SearchSpace:
        if self._space is None:
            from aoe_optuna.spec.stored import space_from_study

            space = space_from_study(study)
            if space is None:
                raise ValueError(
                    f"ReinforceSampler: study {study.study_name!r} stores no aoe spec; "
                    "pass space= (a SearchSpace) or create the study with aoe-tune"
                )
            self._prepare(space)
        assert self._space is not None
        return self._space

    def _features_for(self, study: Study) -> np.ndarray:
        if self._features is None:
            self._features = no_features()
            try:
                from aoe_optuna.spec.stored import stored_spec

                spec = stored_spec(study)
            except ImportError:
                spec = None
            if spec is not None:
                self._features = workload_features(spec.workload, spec.profile)
        return self._features

    def _make_learner(self, features: np.ndarray) -> ReinforceLearner:
        assert self._space is not None and self._masker is not None
        if self._pretrained is not None:
            policy = copy.deepcopy(self._pretrained)
            policy.temperature = self._settings.prior_temperature
        else:
            policy = new_policy(self._space.shape, self._settings.hidden, self._seed)
        return ReinforceLearner(policy, features, self._masker, self._settings)

    def _learner_cache(self, study: Study) -> ReplayCache:
        key = (id(study._storage), study._study_id)
        if self._cache is None or self._cache_key != key:
            features = self._features_for(study)
            self._cache = ReplayCache(lambda: self._make_learner(features))
            self._cache_key = key
            assert self._space is not None
            self._rows = TrialRows(self._space)
            self._observations = ObservationCache(self._rows)
            self._finished = FinishedClaims()
        return self._cache

    # ---------------------------------------------------------- the sampler API
    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._space_for(study).distributions()

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        with one_thread():
            return self._sample(study, trial)

    def _sample(self, study: Study, trial: FrozenTrial) -> dict[str, Any]:
        space = self._space_for(study)
        assert self._masker is not None
        trials = study.get_trials(deepcopy=False, states=_TRIED_STATES)
        cache = self._learner_cache(study)
        assert self._rows is not None and self._observations is not None
        observations = self._observations(trials)
        learner = cache.sync(observations)
        measured = [o.row for o in observations]
        values = np.array([o.value for o in observations])
        tried = self._tried_rows(space, trials, trial.number, self._rows)
        ids = {int(i) for i in space.flat_id(tried)} if tried.shape[0] else set()
        rng = np.random.default_rng([self._seed, trial.number])
        # Another worker may propose at this very moment: claim a config no live trial
        # holds, drawing again when one was taken (see aoe_optuna.samplers.claims).
        for _ in range(CLAIM_ROUNDS):
            row = None
            if (self._local_share > 0 and len(measured) >= self._local_start
                    and rng.random() < self._local_share):
                row = local_proposal(space, measured, values, ids, rng, self._balls)
            if row is None:
                row = propose(
                    learner.policy, learner.features, self._masker, rng, tried, ids,
                    self._settings.explore,
                )
            if row is None:  # every completion tried, or the redraws kept hitting tried ones
                rest = space.sample_feasible(1, rng, exclude=ids)
                if rest.shape[0] == 0:
                    return {}
                row = rest[0]
            config = claim_first_free(study, trial, [space.config(row)], finished=self._finished)
            if config is not None:
                return config
            ids.add(int(space.flat_id(row[None, :])[0]))
            tried = np.concatenate([tried, row[None, :]])
        return {}

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)

    def reseed_rng(self) -> None:
        self._fallback.reseed_rng()

    @staticmethod
    def _tried_rows(
        space: SearchSpace, trials: Sequence[FrozenTrial], current: int, row_of: TrialRows
    ) -> np.ndarray:
        """Feasible index rows of every other trial's config (enqueued ones included)."""
        rows = []
        for t in trials:
            if t.number == current:
                continue
            row = row_of(t)
            if row is not None:
                rows.append(row)
        if not rows:
            return np.zeros((0, len(space.names)), dtype=np.int64)
        arr = np.stack(rows)
        return arr[space.is_feasible(arr)]

    @property
    def replays(self) -> int:
        """How many times this process rebuilt the learner from scratch (for tests and logs)."""
        return 0 if self._cache is None else self._cache.replays
