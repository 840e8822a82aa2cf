"""GPUCBSampler end to end on real Optuna storages and small synthetic spaces."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from gp_ucb_fixtures import SIZES, fails, optimum, run, small_space, throughput
from optuna.trial import TrialState

from aoe_optuna.attrs import GP_HYPER_ATTR as HYPER_ATTR
from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.samplers.gp_ucb import _model as model_module
from aoe_optuna.samplers.registry import make_sampler, sampler_class

optuna.logging.set_verbosity(optuna.logging.ERROR)


def _key(config: dict) -> tuple:
    return tuple(config[k] for k in ("a", "b", "c", "mode"))


def test_registry_builds_it() -> None:
    space = small_space()
    sampler = make_sampler("gp-ucb", space=space, seed=3, n_startup_trials=5)
    assert isinstance(sampler, GPUCBSampler)
    assert sampler_class("gp-ucb") is GPUCBSampler



def _second_proposals(seed: int, n: int) -> tuple[dict, dict, dict]:
    """Worker 1's proposal, worker 2's while it is RUNNING, and the runner-up of worker 1's
    own ranking.

    The runner-up is what the same sampler proposes on the same history when the
    config is excluded without being a pending point: trial ``a`` FAILED instead of
    running (with the feasibility model off a failure is only never repeated; the
    trial keeps its system attributes, so the GP starts from the same hyperparameters).
    Without pending points worker 2 could only skip the claimed config, and would
    propose exactly that runner-up.
    """
    space = small_space()
    kw = {"space": space, "seed": seed, "n_startup_trials": 6, "failures": "off"}
    storage = optuna.storages.InMemoryStorage()
    first = optuna.create_study(storage=storage, study_name="s", direction="maximize",
                                sampler=GPUCBSampler(**kw))
    run(first, space, n)
    second = optuna.load_study(study_name="s", storage=storage, sampler=GPUCBSampler(**kw))
    a = first.ask(space.distributions())  # stays RUNNING in worker 1
    b = second.ask(space.distributions())
    failed = storage.get_trial(a._trial_id)
    alone = optuna.create_study(direction="maximize", sampler=GPUCBSampler(**kw))
    alone.add_trials(first.get_trials()[:n])
    alone.add_trial(optuna.trial.create_trial(
        state=TrialState.FAIL, params=a.params, distributions=failed.distributions,
        system_attrs=failed.system_attrs))
    runner_up = alone.ask(space.distributions())
    assert runner_up.number == b.number  # same trial number: same random streams
    return a.params, b.params, runner_up.params


def test_running_trials_are_pending_points_for_other_workers() -> None:
    """A RUNNING trial is a pending point of the GP (its mean believed, its variance
    collapsed), so a second worker with the same seed does not just take the next
    config of the first worker's ranking, which is mostly a neighbour of the running
    one: it moves away from it. (With pending points switched off, worker 2's
    proposal is the runner-up on every seed.)"""
    space = small_space()

    def steps(x: dict, y: dict) -> int:
        return int(np.abs(space.index(x) - space.index(y)).sum())

    moved, near_b, near_r = 0, 0, 0
    for seed in range(6):
        a, b, runner_up = _second_proposals(seed, n=10)
        assert _key(b) != _key(a)
        moved += _key(b) != _key(runner_up)
        near_b += steps(a, b)
        near_r += steps(a, runner_up)
    assert moved >= 3, moved  # 5 of 6 when measured; 0 without pending points
    assert near_b > near_r, (near_b, near_r)  # 22 vs 9 index steps; equal without them


def test_same_seed_same_history_same_proposals() -> None:
    space = small_space()
    runs = []
    for _ in range(2):
        study = optuna.create_study(direction="maximize",
                                    sampler=GPUCBSampler(space=space, seed=7))
        runs.append([_key(c) for c in run(study, space, 13, hidden_failures=True)])
    assert runs[0] == runs[1]
    other = optuna.create_study(direction="maximize", sampler=GPUCBSampler(space=space, seed=8))
    assert [_key(c) for c in run(other, space, 8)] != runs[0][:8]



def test_a_failed_fit_falls_back_and_the_study_goes_on(monkeypatch) -> None:
    space = small_space()
    study = optuna.create_study(direction="maximize",
                                sampler=GPUCBSampler(space=space, seed=2, n_startup_trials=5))
    run(study, space, 8)
    before = study.trials[-1].system_attrs[HYPER_ATTR]

    def broken(*args, **kwargs):
        raise RuntimeError("forced: Cholesky failed")

    monkeypatch.setattr(model_module, "fit_gpytorch_mll", broken)
    asked = run(study, space, 3)
    assert len({_key(c) for c in [*map(dict, (t.params for t in study.trials))]}) == 11
    assert all(study.trials[-i].system_attrs[HYPER_ATTR] == before for i in (1, 2, 3))
    assert space.is_feasible(np.array([space.index(c) for c in asked])).all()

    # No previous hyperparameters at all: the suggestion is space-filling instead.
    fresh = optuna.create_study(direction="maximize",
                                sampler=GPUCBSampler(space=space, seed=2, n_startup_trials=5))
    assert len(run(fresh, space, 8)) == 8
    assert not any(HYPER_ATTR in t.system_attrs for t in fresh.trials)


def test_plain_optuna_study_without_a_spec_learns_constraints() -> None:
    """Cartesian product of the distributions; rule-breakers and crashes are never repeated."""
    study = optuna.create_study(direction="maximize", sampler=GPUCBSampler(seed=0))

    def objective(trial: optuna.Trial) -> float:
        config = {k: trial.suggest_categorical(k, list(SIZES)) for k in "abc"}
        config["mode"] = trial.suggest_categorical("mode", ["x", "y", "z"])
        trial.set_constraint("ab", config["a"] * config["b"] - 128)
        if config["a"] * config["b"] > 128:
            raise optuna.TrialPruned()
        if fails(config):
            raise RuntimeError("crash")
        return throughput(config)

    study.optimize(objective, n_trials=24, catch=(RuntimeError,))
    keys = [_key(t.params) for t in study.trials]
    assert len(set(keys)) == len(keys)
    states = [t.state for t in study.trials]
    assert states.count(TrialState.COMPLETE) >= 10
    late = [t for t in study.trials[12:] if t.state != TrialState.COMPLETE]
    assert len(late) <= 6  # it learned where not to go (12 later trials)


@pytest.mark.slow
def test_beats_random_search_seed_for_seed() -> None:
    """25 measurements of a 540-config space, 6 seeds.

    Whether a seed lands exactly on the optimum is a knife edge: on one machine
    2 of 3 seeds did, on another (same package versions, other CPU) 1 of 3.
    What must hold everywhere is the comparison with random search on the same
    seeds (measured 2026-12-03: 6 of 6 seeds better, mean 0.88 vs 0.63).
    """
    space = small_space()
    best = optimum(space)
    gp, rnd = [], []
    for seed in range(6):
        for sampler, out in ((GPUCBSampler(space=space, seed=seed), gp),
                             (optuna.samplers.RandomSampler(seed=seed), rnd)):
            study = optuna.create_study(direction="maximize", sampler=sampler)
            run(study, space, 25)
            out.append(study.best_value / best)
    assert sum(g > r for g, r in zip(gp, rnd, strict=True)) >= 5, (gp, rnd)
    assert np.mean(gp) > np.mean(rnd) + 0.1, (gp, rnd)
    assert max(gp) == 1.0  # it does reach the optimum


@pytest.mark.slow
def test_feasibility_model_wastes_fewer_measurements_on_failures() -> None:
    space = small_space()
    wasted = {True: 0, False: 0}
    for use in (True, False):
        for seed in range(2):
            sampler = GPUCBSampler(space=space, seed=seed, failures="auto" if use else "off")
            study = optuna.create_study(direction="maximize", sampler=sampler)
            run(study, space, 24, hidden_failures=True)
            wasted[use] += sum(t.state == TrialState.FAIL for t in study.trials)
    assert wasted[True] < wasted[False]


@pytest.mark.parametrize("bad", [{"n_startup_trials": 0}, {"beta": -1.0},
                                 {"search": {"beta_schedule": "cosine"}},
                                 {"model": {"refit_every": 0}},
                                 {"model": {"floor_quantile": 1.0}},
                                 {"search": {"local_patience": 0}},
                                 {"search": {"local_radius": 0}},
                                 {"search": {"local_patience": "5"}},
                                 {"failures": {"model": "gp"}},
                                 {"failures": {"model": "off", "weighting": "gain"}}])
def test_bad_arguments_say_what_was_expected(bad) -> None:
    with pytest.raises(ValueError, match="expected"):
        GPUCBSampler(space=small_space(), **bad)


def test_hyperparameters_are_fitted_every_suggestion_until_the_study_is_large() -> None:
    from aoe_optuna.samplers.gp_ucb.sampler import REFIT_ALWAYS_BELOW

    default = GPUCBSampler(space=small_space())
    assert all(default._refit_due(n, n - 1) for n in (2, REFIT_ALWAYS_BELOW - 1))
    assert default._refit_due(5_000, None)  # never fitted, or not said: fit now
    # then after each 2% of growth since the last fit, every 3rd at least
    assert [default._refit_due(n, 300) for n in (302, 303, 305, 306)] == [False] * 3 + [True]
    assert not default._refit_due(1019, 1000) and default._refit_due(1020, 1000)
    fits, at = [], 1000
    for n in range(1000, 2000):
        if default._refit_due(n, at):
            fits.append(n)
            at = n
    assert 34 <= len(fits) <= 36  # 50 ln 2: a fit per 2% of growth
    fixed = GPUCBSampler(space=small_space(), model={"refit_every": 4})
    assert fixed._refit_due(8, 7) and not fixed._refit_due(10_001, None)


def test_workers_sharing_a_study_fit_in_turn_from_what_it_stores() -> None:
    """Each trial stores the completed count its hyperparameters were fitted on, so a
    worker whose asks skip counts (others told trials in between) still refits."""
    from aoe_optuna.attrs import GP_FITTED_AT_ATTR, GP_HYPER_ATTR
    from aoe_optuna.samplers.gp_ucb.sampler import _previous_fitted_at

    space = small_space()
    study = optuna.create_study(direction="maximize",
                                sampler=GPUCBSampler(space=space, seed=2, n_startup_trials=5))
    run(study, space, 8)
    trials = study.get_trials()
    stored = [(t.number, t.system_attrs.get(GP_FITTED_AT_ATTR)) for t in trials
              if t.system_attrs.get(GP_HYPER_ATTR) is not None]
    # below 300 trials every step fits, on the trials completed before it
    assert stored and all(number == at for number, at in stored)
    assert _previous_fitted_at(trials) == stored[-1][1]


def test_plain_study_keeps_its_own_distributions() -> None:
    """A log-scaled int keeps its distribution; every value proposed is distinct and in range."""
    study = optuna.create_study(sampler=GPUCBSampler(seed=0, n_startup_trials=4))

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_int("x", 1, 64, log=True)
        kind = trial.suggest_categorical("kind", ["p", "q"])
        return abs(np.log2(x) - 3) + (kind == "q")

    study.optimize(objective, n_trials=10)
    pairs = [(t.params["x"], t.params["kind"]) for t in study.trials]
    assert len(set(pairs)) == 10 and all(1 <= x <= 64 for x, _ in pairs)
    assert study.trials[-1].distributions["x"] == optuna.distributions.IntDistribution(
        1, 64, log=True)
    assert any(HYPER_ATTR in t.system_attrs for t in study.trials)  # the GP ran on it


def test_space_comes_from_the_spec_stored_in_the_study() -> None:
    from aoe_optuna.spec.loader import load_spec
    from aoe_optuna.spec.stored import SPEC_ATTR
    from aoe_optuna.study.run.objective import suggest_config

    spec = load_spec("studies/qwen25_7b_decode_910b2.json")
    study = optuna.create_study(direction="maximize", sampler=GPUCBSampler(seed=0))
    study.set_user_attr(SPEC_ATTR, spec.canonical())
    for value in (1.0, 2.0, 3.0):
        trial = study.ask()
        config = suggest_config(trial, spec.space)
        assert set(trial.params) == set(spec.space.names)  # every tuned parameter
        assert spec.space.is_feasible(spec.space.index(config)[None, :])[0]
        study.tell(trial, value)


def test_after_a_stall_every_other_suggestion_is_one_change_from_a_best_config() -> None:
    """The opt-in local phase (``_local``) on a study whose best is 39 trials old."""
    space = small_space()
    dists = space.distributions()
    rng = np.random.default_rng(0)
    rows = space.sample_feasible(40, rng)
    values = [throughput(space.config(r)) for r in rows]
    order = np.argsort(values)[::-1]
    # the best first, then 39 worse ones: the best is 39 measurements old (even count: 40)
    study = optuna.create_study(direction="maximize", sampler=GPUCBSampler(
        space=space, seed=1, n_startup_trials=4, search={"local_patience": 5}))
    for i in order[:1].tolist() + order[1:].tolist()[::-1]:
        study.add_trial(optuna.trial.create_trial(
            params=space.config(rows[i]), distributions=dists, value=values[i]))
    best5 = np.array([rows[i] for i in order[:5]])
    local = study.ask(dists)
    local_row = space.index(local.params)
    assert min(int((local_row != c).sum()) for c in best5) <= 1
    unrestricted = optuna.create_study(direction="maximize", sampler=GPUCBSampler(
        space=space, seed=1, n_startup_trials=4))
    unrestricted.add_trials(study.get_trials()[:-1])
    far = space.index(unrestricted.ask(dists).params)
    assert min(int((far != c).sum()) for c in best5) > 1  # what global UCB would measure
    study.tell(local, throughput(local.params))
    # the next one (odd count) is global again: the same sampler without the phase agrees
    global_step = study.ask(dists)
    twin = optuna.create_study(direction="maximize", sampler=GPUCBSampler(
        space=space, seed=1, n_startup_trials=4))
    twin.add_trials(study.get_trials()[:-1])
    assert twin.ask(dists).params == global_step.params



def test_incumbent_flips_measure_the_best_with_each_other_category() -> None:
    """With ``search.incumbent_flips`` the first proposals past the start are the best
    measured config with ``mode`` changed, each other choice once, marked as flips,
    never more than a quarter of the measurements."""
    from aoe_optuna.attrs import GP_FLIP_ATTR

    space = small_space()
    study = optuna.create_study(direction="maximize", sampler=GPUCBSampler(
        space=space, seed=4, n_startup_trials=8, search={"incumbent_flips": True}))
    asked = run(study, space, 20)
    flips = [t.number for t in study.trials if t.system_attrs.get(GP_FLIP_ATTR)]
    assert flips and flips[0] == 8  # the first proposal past the start
    assert len(flips) <= max(1, 20 // 4)
    for n in flips:
        best = max(study.trials[:n], key=lambda t: t.value)
        changed = {k for k in best.params if best.params[k] != asked[n][k]}
        assert changed == {"mode"}
    plain = optuna.create_study(direction="maximize", sampler=GPUCBSampler(
        space=space, seed=4, n_startup_trials=8))
    run(plain, space, 12)
    assert not any(t.system_attrs.get(GP_FLIP_ATTR) for t in plain.trials)
