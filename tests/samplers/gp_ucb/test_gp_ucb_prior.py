"""GPUCBSampler with a prior, end to end on Optuna studies of the small synthetic space."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from gp_ucb_fixtures import optimum, run, small_space, throughput

from aoe_optuna.attrs import GP_PRIOR_ATTR
from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.samplers.registry import make_sampler

optuna.logging.set_verbosity(optuna.logging.ERROR)


def _noisy_prior(config: dict) -> float:
    """What another device would say: the same landscape, its peak one step off in c."""
    shifted = {**config, "c": min(config["c"] * 2, 32)}
    return throughput(shifted)


def _to_best(prior, seed: int, n: int = 25) -> tuple[int, optuna.Study]:
    space = small_space()
    study = optuna.create_study(direction="maximize",
                                sampler=GPUCBSampler(space=space, seed=seed, prior=prior))
    asked = run(study, space, n)
    best = optimum(space)
    hits = [i for i, c in enumerate(asked) if throughput(c) >= 0.99 * best]
    return (hits[0] + 1 if hits else n + 1), study


def test_the_first_proposal_is_the_priors_best() -> None:
    space = small_space()
    study = optuna.create_study(direction="maximize",
                                sampler=GPUCBSampler(space=space, seed=0, prior=throughput))
    first = run(study, space, 1)[0]
    assert throughput(first) == optimum(space)


@pytest.mark.slow
def test_a_related_prior_finds_the_optimum_sooner_than_none() -> None:
    with_prior = [_to_best(_noisy_prior, seed)[0] for seed in range(3)]
    without = [_to_best(None, seed)[0] for seed in range(3)]
    assert np.median(with_prior) <= 0.5 * np.median(without), (with_prior, without)


def test_the_trust_in_a_prior_is_stored_and_a_misleading_one_loses_its_weight() -> None:
    rng = np.random.default_rng(0)
    table = {}

    def noise(config: dict) -> float:  # a prior that knows nothing
        key = tuple(config.values())
        return table.setdefault(key, float(rng.random()))

    def sqrt_of_truth(config: dict) -> float:  # the right order in other units
        return throughput(config) ** 0.5

    _, good = _to_best(sqrt_of_truth, 0)
    _, bad = _to_best(noise, 0)
    good_trust = good.trials[-1].system_attrs[GP_PRIOR_ATTR]
    bad_trust = bad.trials[-1].system_attrs[GP_PRIOR_ATTR]
    assert good_trust["name"] == "sqrt_of_truth" and good_trust["measured"] == 24
    assert good_trust["weight"] > 0.5 and good_trust["correlation"] > 0.9
    assert bad_trust["weight"] < 0.25 < good_trust["weight"]


def test_the_prior_as_an_input_is_the_other_mechanism() -> None:
    space = small_space()
    sampler = make_sampler("gp-ucb", space=space, seed=0, prior=_noisy_prior,
                           prior_settings={"mechanism": "feature"})
    study = optuna.create_study(direction="maximize", sampler=sampler)
    run(study, space, 12)
    trust = study.trials[-1].system_attrs[GP_PRIOR_ATTR]
    assert "weight" not in trust and trust["correlation"] > 0.5


def test_bad_prior_settings_name_the_field() -> None:
    with pytest.raises(ValueError, match="prior_settings.mechanism"):
        GPUCBSampler(space=small_space(), prior_settings={"mechanism": "both"})
    with pytest.raises(ValueError, match="prior_settings.top_share"):
        GPUCBSampler(space=small_space(), prior_settings={"top_share": 0})


def test_the_start_names_the_prior_and_a_proposal_past_it_never_says_start() -> None:
    # the start's proposals record the prior as guiding them; past it each record is the
    # model's weighing, and a proposal the prior did not choose (the incumbent with its
    # category changed) records none, so the summary keeps the last weighing
    from aoe_optuna.attrs import GP_FLIP_ATTR

    space = small_space()
    sampler = GPUCBSampler(space=space, seed=4, prior=_noisy_prior, n_startup_trials=8,
                           search={"incumbent_flips": True})
    study = optuna.create_study(direction="maximize", sampler=sampler)
    run(study, space, 16)
    records = [t.system_attrs.get(GP_PRIOR_ATTR) for t in study.trials]
    assert records[0] == {"name": "_noisy_prior", "stage": "start"}
    flipped = [t.number for t in study.trials if t.system_attrs.get(GP_FLIP_ATTR)]
    assert flipped and all(records[n] is None for n in flipped)
    weighed = [records[n] for n in range(8, 16) if n not in flipped]
    assert weighed and all("stage" not in r and "weight" in r for r in weighed)
