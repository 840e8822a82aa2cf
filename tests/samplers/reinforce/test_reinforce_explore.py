"""Exploring draws of the untrained sampler: a global model's pick among uniform configs."""

from __future__ import annotations

import numpy as np

import aoe_optuna.samplers.reinforce.sampler as sampler_module
from aoe_optuna.samplers.reinforce import ReinforceSampler
from aoe_optuna.samplers.reinforce._explore import model_draw
from aoe_optuna.samplers.reinforce._local_model import MIN_MEASURED
from tests.samplers.reinforce.test_reinforce import SMALL_BATCH, run
from tests.samplers.reinforce.test_reinforce_masking import brute, small_space


def _picks(space, measured: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, set[int]]:
    """40 draws (seeds 0-39) after ``measured`` got ``values``, and the tried flat ids."""
    tried = {int(i) for i in space.flat_id(measured)}
    picks = np.stack([model_draw(space, list(measured), values, tried, np.random.default_rng(s))
                      for s in range(40)])
    return picks, tried


def test_the_draw_is_untried_feasible_and_favours_what_the_measurements_favour() -> None:
    space = small_space()
    every = brute(space)
    pipe = space.names.index("pipeline")
    rng = np.random.default_rng(0)
    measured = every[rng.choice(every.shape[0], 40, replace=False)]
    # double buffering doubles throughput; everything else is flat
    values = np.where(measured[:, pipe] == 2, 2.0, 1.0)
    picks, tried = _picks(space, measured, values)
    assert space.is_feasible(picks).all()
    assert not set(space.flat_id(picks).tolist()) & tried
    share_uniform = float(np.mean(every[:, pipe] == 2))
    assert share_uniform < 0.5
    assert np.mean(picks[:, pipe] == 2) > 0.9  # uniform would give share_uniform


def test_failed_measurements_count_as_the_worst_value() -> None:
    space = small_space()
    every = brute(space)
    pipe = space.names.index("pipeline")
    rng = np.random.default_rng(1)
    measured = every[rng.choice(every.shape[0], 60, replace=False)]
    values = np.where(measured[:, pipe] == 2, np.nan, 1.0 + 0.01 * rng.random(60))
    picks, tried = _picks(space, measured, values)
    assert np.mean(picks[:, pipe] == 2) < 0.1


def test_no_draw_before_the_model_has_enough_measurements() -> None:
    space = small_space()
    rows = brute(space)[: MIN_MEASURED - 1]
    values = np.ones(rows.shape[0])
    tried = {int(i) for i in space.flat_id(rows)}
    assert model_draw(space, list(rows), values, tried, np.random.default_rng(0)) is None


def test_only_the_untrained_sampler_with_moves_makes_model_draws(monkeypatch) -> None:
    space = small_space()
    calls: list[int] = []
    real = sampler_module.model_draw

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(sampler_module, "model_draw", counting)
    run(space, ReinforceSampler(space=space, seed=0, learner=SMALL_BATCH, local=0), 30)
    assert not calls  # policy draws only, as ``local=0`` says
    run(space, ReinforceSampler(space=space, seed=0, learner=SMALL_BATCH), 30)
    assert calls
