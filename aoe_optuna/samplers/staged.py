"""StagedSampler: Bayesian optimisation first, then the policy-gradient sampler on what it found.

Huawei's AOE tunes a GEMM this way: Bayesian optimisation for its first
iterations, then reinforcement learning that starts from the configs the BO
phase measured. Here the first ``switch_after`` measurements come from
GPUCBSampler and the rest from ReinforceSampler, whose learner replays every
trial in storage (the GP's included) before its first proposal, so it starts
trained on them. Each stage is the sampler itself, with the same seed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.samplers.reinforce import ReinforceSampler
from aoe_optuna.space.search_space import SearchSpace

SWITCH_AFTER = 100  # AOE's default: 100 BO iterations before the RL phase
_MEASURED = (TrialState.COMPLETE, TrialState.FAIL)


class StagedSampler(BaseSampler):
    """GPUCBSampler for the first ``switch_after`` measurements, then ReinforceSampler.

    Args:
        space, seed, constraints_func: passed to both stages.
        switch_after: measurements (completed or failed trials) made by the first stage.
        gp_ucb, reinforce: further keyword arguments of each stage's sampler.
    """

    def __init__(
        self,
        *,
        space: SearchSpace | None = None,
        seed: int | None = None,
        switch_after: int = SWITCH_AFTER,
        gp_ucb: Mapping[str, Any] | None = None,
        reinforce: Mapping[str, Any] | None = None,
        constraints_func: Callable[[FrozenTrial], Sequence[float]] | None = None,
    ) -> None:
        if isinstance(switch_after, bool) or not isinstance(switch_after, int) or switch_after < 0:
            raise ValueError(f"switch_after: expected an int >= 0, got {switch_after!r}")
        self.switch_after = switch_after
        common: dict[str, Any] = {"space": space, "seed": seed,
                                  "constraints_func": constraints_func}
        self._first = GPUCBSampler(**common, **dict(gp_ucb or {}))
        self._then = ReinforceSampler(**common, **dict(reinforce or {}))
        self._stage_of: dict[tuple[int, int], BaseSampler] = {}

    def _stage(self, study: Study, trial: FrozenTrial) -> BaseSampler:
        """The stage of ``trial``, fixed at its first call so that every hook agrees."""
        key = (study._study_id, trial.number)
        if key not in self._stage_of:
            measured = len(study.get_trials(deepcopy=False, states=_MEASURED))
            self._stage_of[key] = self._first if measured < self.switch_after else self._then
        return self._stage_of[key]

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._stage(study, trial).infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return self._stage(study, trial).sample_relative(study, trial, search_space)

    def sample_independent(
        self, study: Study, trial: FrozenTrial, param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        return self._stage(study, trial).sample_independent(
            study, trial, param_name, param_distribution
        )

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._stage(study, trial).before_trial(study, trial)

    def after_trial(
        self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        stage = self._stage_of.pop((study._study_id, trial.number), None)
        (stage or self._stage(study, trial)).after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self._first.reseed_rng()
        self._then.reseed_rng()
