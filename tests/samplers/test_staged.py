"""StagedSampler: gp-ucb's proposals first, then ReinforceSampler's on the same history."""

from __future__ import annotations

import optuna
import pytest
from gp_ucb_fixtures import run, small_space

from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.samplers.registry import make_sampler
from aoe_optuna.samplers.reinforce import ReinforceSampler
from aoe_optuna.samplers.staged import StagedSampler

optuna.logging.set_verbosity(optuna.logging.ERROR)


def test_each_stage_proposes_what_its_sampler_alone_would() -> None:
    space = small_space()
    staged = optuna.create_study(direction="maximize", sampler=make_sampler(
        "gp-ucb-then-reinforce", space=space, seed=4, switch_after=10))
    asked = run(staged, space, 13)
    gp = optuna.create_study(direction="maximize", sampler=GPUCBSampler(space=space, seed=4))
    assert run(gp, space, 10) == asked[:10]
    for n in (10, 11, 12):  # reinforce, trained on every trial before it, GP's included
        alone = optuna.create_study(direction="maximize",
                                    sampler=ReinforceSampler(space=space, seed=4))
        alone.add_trials(staged.trials[:n])
        assert alone.ask(space.distributions()).params == asked[n], n


def test_failures_count_as_measurements_of_the_first_stage() -> None:
    space = small_space()
    sampler = StagedSampler(space=space, seed=0, switch_after=3)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for _ in range(3):
        study.tell(study.ask(space.distributions()), state=optuna.trial.TrialState.FAIL)
    trial = study.ask(space.distributions())
    assert sampler._stage(study, study._storage.get_trial(trial._trial_id)) is sampler._then


@pytest.mark.parametrize("bad", [-1, 2.5, True, "100"])
def test_bad_switch_after_is_one_line(bad) -> None:
    with pytest.raises(ValueError, match=r"switch_after: expected an int >= 0, got"):
        StagedSampler(switch_after=bad)
