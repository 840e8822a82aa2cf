"""GPUCBSampler and ReinforceSampler under the test cases Optuna runs against its own samplers.

``optuna.testing.pytest_samplers`` is the contract Optuna's samplers are held
to (tests/samplers_tests/test_samplers.py there): values inside every float,
log-float, stepped, int, log-int and categorical distribution, NaN values,
PartialFixedSampler, conditional and dynamic search spaces, relative
sampling. Here it runs against both samplers on plain studies, without a spec
(floats on each sampler's grid of values).
"""

from __future__ import annotations

from collections.abc import Callable

import optuna
import pytest
from _pytest.fixtures import SubRequest
from optuna.distributions import CategoricalDistribution
from optuna.samplers import BaseSampler
from optuna.testing.pytest_samplers import BasicSamplerTestCase, RelativeSamplerTestCase

from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.samplers.reinforce import ReinforceSampler

SAMPLERS = {
    "gp-ucb": lambda: GPUCBSampler(n_startup_trials=1),
    "gp-ucb-grid5": lambda: GPUCBSampler(n_startup_trials=1, search={"float_grid_points": 5}),
    "reinforce": lambda: ReinforceSampler(),
    "reinforce-grid5": lambda: ReinforceSampler(float_grid_points=5, int_grid_points=5, local=0.5),
}


class TestBasicSampler(BasicSamplerTestCase):
    @pytest.fixture(params=list(SAMPLERS.values()), ids=list(SAMPLERS))
    def sampler(self, request: SubRequest) -> Callable[[], BaseSampler]:
        return request.param


class TestRelativeSampler(RelativeSamplerTestCase):
    @pytest.fixture(params=list(SAMPLERS.values()), ids=list(SAMPLERS))
    def sampler(self, request: SubRequest) -> Callable[[], BaseSampler]:
        return request.param

    def test_sample_relative_categorical(self, sampler: Callable[[], BaseSampler]) -> None:
        """Optuna's version asks 10 proposals of a 9-config space with none told.

        Neither sampler proposes a config another trial holds, so once all
        9 are taken it proposes nothing relative and the trial's values come
        from ``sample_independent`` (random), as documented. The rest holds:
        every relative proposal is inside the choices, as plain ints.
        """
        space = {"x": CategoricalDistribution([1, 10, 100]),
                 "y": CategoricalDistribution([-1, -10, -100])}
        study = optuna.create_study(sampler=sampler())
        trial = study.ask(space)
        study.tell(trial, sum(trial.params.values()))
        proposals = []
        for _ in range(10):
            new = study.ask()  # RUNNING, like Optuna's _create_new_trial
            proposals.append(study.sampler.sample_relative(study, study._storage.get_trial(
                new._trial_id), space))
        full = [p for p in proposals if p]
        assert len(full) == 8 and proposals[8:] == [{}, {}]
        assert len({tuple(p.values()) for p in full}) == 8
        for p in full:
            assert set(p) == {"x", "y"}
            assert all(type(v) is int and v in space[k].choices for k, v in p.items())


