"""A plain study's space, its float grid, its constraint values: the parts both samplers share."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution, IntDistribution

from aoe_optuna.samplers.plain_space import PlainSpaces
from aoe_optuna.samplers.reinforce._plain_values import as_throughput
from aoe_optuna.samplers.trial_constraints import breaks_a_constraint, constraint_values
from aoe_optuna.samplers.value_grid import float_grid

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(**dists: optuna.distributions.BaseDistribution) -> optuna.Study:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(3):
        trial = study.ask(dict(dists))
        study.tell(trial, 1.0)
    return study


def test_no_space_before_a_trial_then_the_study_distributions() -> None:
    spaces = PlainSpaces(float_points=9)
    assert spaces(optuna.create_study()) is None
    study = _study(n=IntDistribution(1, 64, log=True), x=FloatDistribution(-1, 1),
                   c=optuna.distributions.CategoricalDistribution(["a", "b"]))
    plain = spaces(study)
    assert plain is not None
    assert plain.space.names == ("c", "n", "x")
    by_name = {p.name: p for p in plain.space.params}
    assert by_name["n"].choices == tuple(range(1, 65))
    assert by_name["x"].choices == float_grid(FloatDistribution(-1, 1), 9)
    assert by_name["c"].kind == "categorical"
    assert plain.distributions["n"] == IntDistribution(1, 64, log=True)  # log stays log
    assert spaces(study) is plain  # the same object while the distributions stay


def test_a_changed_distribution_is_a_new_space() -> None:
    spaces = PlainSpaces(float_points=5)
    first = spaces(_study(n=IntDistribution(1, 4)))
    second = spaces(_study(n=IntDistribution(1, 5)))
    assert first is not None and second is not None and first is not second
    assert second.space.params[0].choices == (1, 2, 3, 4, 5)


@pytest.mark.parametrize("maximize", [True, False])
def test_plain_values_keep_their_order_and_stay_finite(maximize: bool) -> None:
    values = np.array([-1e308, -1e6, -3.0, -1e-9, 0.0, 1e-9, 2.5, 1e6, 1e308])
    mapped = np.array([as_throughput(v, maximize) for v in values])
    assert np.all(np.isfinite(mapped)) and np.all(mapped > 0)
    steps = np.diff(mapped)
    assert np.all(steps >= 0 if maximize else steps <= 0)
    assert np.all(np.diff(mapped[2:-2]) != 0)  # strictly, away from the clipped ends
    assert math.isnan(as_throughput(float("nan"), maximize))


def test_a_minimised_time_becomes_about_its_inverse() -> None:
    """log of the mapped value ~ log(1 / 2t): the log throughput of a measured time."""
    for t in (50.0, 1e3, 1e5):
        assert math.log(as_throughput(t, maximize=False)) == pytest.approx(-math.log(2 * t),
                                                                           rel=1e-3)


def test_constraint_values_in_both_of_optunas_forms() -> None:
    study = optuna.create_study()
    listed = study.ask()
    study._storage.set_trial_system_attr(listed._trial_id, "constraints", (0.0, 2.0))
    study.tell(listed, 1.0)
    keyed = study.ask()
    keyed.set_constraint("memory", -1.0)
    keyed.set_constraint("time", 0.0)
    study.tell(keyed, 1.0)
    plain = study.ask()
    study.tell(plain, 1.0)
    first, second, third = study.get_trials()
    assert sorted(constraint_values(first)) == [0.0, 2.0] and breaks_a_constraint(first)
    assert sorted(constraint_values(second)) == [-1.0, 0.0] and not breaks_a_constraint(second)
    assert constraint_values(third) == [] and not breaks_a_constraint(third)


@pytest.mark.parametrize("dist", [
    IntDistribution(1, 9), IntDistribution(0, 100, step=5), IntDistribution(0, 120),
    IntDistribution(1, 121, step=3), IntDistribution(1, 4096, log=True),
])
def test_wide_ints_become_a_grid_on_their_step(dist: IntDistribution) -> None:
    from aoe_optuna.samplers.value_grid import int_grid, snap_int

    grid = int_grid(dist, 13)
    values = list(range(dist.low, dist.high + 1, dist.step))
    if len(values) <= 13:
        assert grid == tuple(values)  # few values: all of them
    else:
        assert len(grid) == 13 and grid[0] == dist.low and grid[-1] == values[-1]
        axis = np.log(grid) if dist.log else np.asarray(grid, dtype=float)
        gaps = np.diff(axis)
        assert gaps.max() - gaps.min() <= (np.log(2) if dist.log else dist.step)  # even
    assert all(dist._contains(v) for v in grid)
    assert snap_int(dist, grid[3] + 1, 13) in grid
    if dist.log:
        assert grid == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def test_a_reinforce_space_grids_wide_ints_and_keeps_narrow_ones() -> None:
    study = _study(n=IntDistribution(1, 20), m=IntDistribution(1, 512, log=True))
    plain = PlainSpaces(float_points=10, int_points=10)(study)
    assert plain is not None
    by_name = {p.name: p.choices for p in plain.space.params}
    assert by_name["m"] == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    assert len(by_name["n"]) == 10 and by_name["n"][0] == 1 and by_name["n"][-1] == 20


@pytest.mark.parametrize("sampler", ["gp-ucb", "reinforce"])
def test_names_of_gemm_tunables_take_any_values_in_a_plain_study(sampler: str) -> None:
    """"layout" or "pipeline" in a plain study are the user's, not the GEMM kernel's."""
    from aoe_optuna.samplers.gp_ucb import GPUCBSampler
    from aoe_optuna.samplers.reinforce import ReinforceSampler

    def objective(trial: optuna.Trial) -> float:
        layout = trial.suggest_categorical("layout", ["row", "col", "tiled"])
        pipeline = trial.suggest_categorical("pipeline", ["a", "b"])
        tile_m = trial.suggest_int("tile_m", 1, 7)
        return float(tile_m) + (layout == "tiled") + (pipeline == "b")

    made = GPUCBSampler(seed=0, n_startup_trials=3) if sampler == "gp-ucb" else ReinforceSampler(
        seed=0)
    study = optuna.create_study(sampler=made)
    study.optimize(objective, n_trials=12)
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    plain = PlainSpaces(float_points=33)(study)
    assert plain is not None
    rows = [plain.space.index(t.params) for t in study.trials]
    assert len({tuple(r) for r in rows}) == len(rows)  # every trial a distinct config


def test_the_space_follows_optunas_intersection_as_trials_finish() -> None:
    """Folded in trial by trial, across calls, it is Optuna's intersection over all of them."""
    spaces = PlainSpaces(float_points=5)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    wide = {"a": IntDistribution(1, 4), "b": FloatDistribution(0.0, 1.0),
            "c": IntDistribution(0, 2)}
    for i, dists in enumerate([wide, wide, {**wide, "b": FloatDistribution(0.0, 2.0)}, wide]):
        running = study.ask(dict(dists))
        state = optuna.trial.TrialState.FAIL if i == 3 else optuna.trial.TrialState.PRUNED
        study.tell(running, 1.0 if i < 2 else None, state=None if i < 2 else state)
        expected = optuna.search_space.intersection_search_space(
            study.get_trials(deepcopy=False), include_pruned=True
        )
        plain = spaces(study)
        assert plain is not None
        assert plain.distributions == expected
    assert sorted(plain.distributions) == ["a", "c"]  # "b" changed on the pruned trial
    other = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    other.enqueue_trial({"a": 2})
    other.tell(other.ask({"a": IntDistribution(1, 4)}), 1.0)
    assert sorted(spaces(other).distributions) == ["a"]  # another study starts afresh


def test_a_storage_cache_copies_empty_and_drops_a_storage_with_it() -> None:
    import copy
    import gc
    import pickle

    from aoe_optuna.samplers.storage_cache import StorageCache

    class Storage:
        pass

    storage = Storage()
    cache: StorageCache[dict[int, int]] = StorageCache()
    cache[storage] = {1: 2}
    assert len(pickle.loads(pickle.dumps(cache))) == 0 and len(copy.deepcopy(cache)) == 0
    del storage
    gc.collect()
    assert len(cache) == 0
