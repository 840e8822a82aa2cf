"""ReinforceSampler: an Optuna sampler whose proposals come from a learned policy.

Each call rebuilds (or catches up) the learner from storage, then draws one
whole config from the policy with infeasible and already-tried choices
masked out, or (a ``local`` share of the calls) makes a small move around
one of the best configs measured so far. Without a pretrained policy, once
the moves have started, the calls that are not moves take a global model's
pick among uniform configs instead of a policy draw (:mod:`._explore`).
Optional start: a policy pretrained on other shapes and SoCs
(:mod:`aoe_optuna.samplers.reinforce.pretrain`).

On a plain Optuna study (no spec stored, no ``space=``) the space is read from
the distributions the trials used (:mod:`aoe_optuna.samplers.plain_space`):
categorical and narrow ints as their choices, floats and wide ints (log ones
geometrically) as grids of values;
objective values of either direction become throughputs by
:mod:`._plain_values`, and failed trials and those that broke a constraint
(``constraints_func``, ``Trial.set_constraint``) are failures it learns from.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
import torch
from optuna.distributions import BaseDistribution, FloatDistribution, IntDistribution
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.samplers.base import ConstrainedSampler, ConstraintsFunc, serialized
from aoe_optuna.samplers.claims import FinishedClaims, claim_first_free, claimed_params
from aoe_optuna.samplers.neighbourhood import BallCache
from aoe_optuna.samplers.plain_space import PlainSpace, PlainSpaces
from aoe_optuna.samplers.reinforce._explore import model_draw
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
from aoe_optuna.samplers.torch_threads import one_torch_thread as one_thread
from aoe_optuna.samplers.value_grid import FLOAT_GRID_POINTS, snap, snap_int
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Workload

if TYPE_CHECKING:
    from aoe_optuna.spec.loader import StudySpec

# The share of proposals that are local moves, with or without a pretrained policy
# (docs/decisions/0006-reinforce-local-moves.md).
LOCAL_SHARE = 0.8
# Without a policy, the first configs are poor and moves around them only climb the
# nearest hill: local moves start once this many measurements exist (the policy's
# draws explore until then). A pretrained policy's first draw is already near the
# optimum, so with one they start after the first measurement.
LOCAL_START_UNTRAINED = 10
INT_GRID_POINTS = 17  # values standing for a wider int parameter of a plain study
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


class ReinforceSampler(ConstrainedSampler):
    """Policy-gradient sampler over a constrained discrete SearchSpace, or a plain study's space.

    Args:
        space: the study's SearchSpace; None reads it from the spec stored in the
            study, else from the distributions its trials used (floats, and ints
            with more values, as grids of ``float_grid_points`` values;
            :mod:`aoe_optuna.samplers.plain_space`).
        seed: fixes the initial policy and every draw (draw ``n`` uses ``(seed, n)``).
        policy: path of a pretrained policy file to start from.
        features: the operator feature vector; by default computed from
            ``workload`` and ``profile`` (:meth:`from_spec` passes the spec's). Without
            either, a GEMM tiling space runs with no operator features, and a warning
            says so.
        local: the share of proposals that are small moves around the best
            configs measured (:mod:`._local`; a policy draw when no untried config
            is near), from the first measurement with a policy, from the
            ``LOCAL_START_UNTRAINED``-th without (the other calls then a global
            model's pick, :mod:`._explore`); None: ``LOCAL_SHARE`` (0.8);
            0: policy draws only.
        learner: the online learner's settings: a :class:`LearnerSettings`, or a mapping
            of its fields (``{"batch_size": 4}``, as ``--sampler-kwargs`` gives them).
        float_grid_points: values standing for each float parameter of a plain study.
        int_grid_points: values standing for each int parameter of a plain study that
            has more (geometric on a log-int): a policy head learns a few choices
            faster than many, and a local move crosses a coarse grid in fewer steps
            (on a 1..1024 log-int, 17 points found the optimum in 40 trials where 33
            did not; tests/hub/test_benchmark_problems.py).
        constraints_func: as Optuna's samplers take it: the constraint values of a
            finished trial (feasible when all are <= 0), stored with the trial; a
            completed trial that breaks one is learnt from as a failure.
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
        float_grid_points: int = FLOAT_GRID_POINTS,
        int_grid_points: int = INT_GRID_POINTS,
        constraints_func: ConstraintsFunc | None = None,
    ) -> None:
        for name, points in (("float_grid_points", float_grid_points),
                             ("int_grid_points", int_grid_points)):
            if points < 2:
                raise ValueError(f"{name}: expected >= 2, got {points}")
        self._settings = learner_settings(learner)
        self._local_share = _local_share(local)
        self._local_start = 1 if policy is not None else LOCAL_START_UNTRAINED
        super().__init__("ReinforceSampler", seed, constraints_func)
        self._space = space
        self._given = space  # a space given or read from the stored spec: never re-inferred
        self._plain = PlainSpaces(float_grid_points, int_points=int_grid_points)
        self._float_grid_points = float_grid_points
        self._int_grid_points = int_grid_points
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
        if space is not None:
            self._prepare(space)

    @classmethod
    def from_spec(cls, spec: StudySpec, **options: Any) -> ReinforceSampler:
        """The sampler aoe-tune builds for ``spec``: its space, and the operator features
        of its workload on its SoC."""
        return cls(space=spec.space, workload=spec.workload, profile=spec.profile, **options)

    # ------------------------------------------------------------- set-up
    def _prepare(self, space: SearchSpace) -> None:
        self._space = space
        self._masker = ChoiceMasker(space)
        self._balls = BallCache(space)
        if self._policy_path is not None:
            self._pretrained, self._pretrained_info = load_policy(self._policy_path, space)

    def _space_for(self, study: Study) -> SearchSpace | None:
        """The given or stored space, else the plain study's (None before any trial)."""
        if self._given is None:
            space = self._stored_space(study)
            if space is not None:
                self._given = space
                self._prepare(space)
        if self._given is not None:
            return self._given
        plain = self._plain_space(study)
        if plain is None:
            return None
        if plain.space is not self._space:  # a new set of distributions: a new policy
            self._prepare(plain.space)
            self._cache = None
        return plain.space

    def _plain_space(self, study: Study) -> PlainSpace | None:
        return None if self._given is not None else self._plain(study)

    def _features_for(self, space: SearchSpace) -> np.ndarray:
        if self._features is None:
            self._warn_without_workload(space, "the policy's operator features")
            self._features = no_features()
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
        key = (id(study._storage), study._study_id, id(self._space))
        if self._cache is None or self._cache_key != key:
            assert self._space is not None
            features = self._features_for(self._space)
            self._cache = ReplayCache(lambda: self._make_learner(features))
            self._cache_key = key
            assert self._space is not None
            self._rows = TrialRows(self._space)
            plain = self._given is None
            maximize = study.direction == optuna.study.StudyDirection.MAXIMIZE
            self._observations = ObservationCache(self._rows, maximize if plain else None)
            self._finished = FinishedClaims()
        return self._cache

    # ---------------------------------------------------------- the sampler API
    @serialized
    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        space = self._space_for(study)
        if space is None or not search_space:
            return {}
        if self._given is None and set(space.names) <= set(claimed_params(trial)):
            return {}  # an enqueued trial of a plain study: its params are fixed
        with one_thread():
            config = self._sample(study, trial, space)
        # a wrapper (PartialFixedSampler) may ask for fewer parameters than the space has
        return {k: v for k, v in config.items() if k in search_space}

    def _sample(self, study: Study, trial: FrozenTrial, space: SearchSpace) -> dict[str, Any]:
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
            if (row is None and self._pretrained is None and self._local_share > 0
                    and len(measured) >= self._local_start):
                row = model_draw(space, measured, values, ids, rng)
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
        value = self._independent.sample_independent(study, trial, param_name, param_distribution)
        if self._given is not None:
            return value
        # on the grid, so that this trial is a config of the plain study's space
        if isinstance(param_distribution, FloatDistribution):
            return snap(param_distribution, value, self._float_grid_points)
        if isinstance(param_distribution, IntDistribution):
            return snap_int(param_distribution, value, self._int_grid_points)
        return value

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

