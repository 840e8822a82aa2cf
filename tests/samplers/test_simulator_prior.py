"""The simulator as a prior: calibrated per kernel family on the study's measurements."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aoe_optuna.samplers.priors.simulator import family_keys, spec_simulator_prior
from aoe_optuna.spec.loader import load_spec

ROOT = Path(__file__).resolve().parents[2]
CATLASS = ROOT / "studies" / "qwen25_7b_decode_catlass_910b2.json"


def test_each_family_gets_its_own_scale_from_the_measurements() -> None:
    spec = load_spec(CATLASS)
    prior = spec_simulator_prior(spec)
    rows = spec.space.sample_feasible(400, np.random.default_rng(0))
    keys = family_keys(spec.space, rows)
    assert set(np.unique(keys)) <= {0, 1, 2} and len(np.unique(keys)) >= 2  # no Preload+split-K
    step = prior.model_step_s(spec.space, rows)
    # a chip whose Preload kernels run 1.3x the model's time and the rest 0.9x
    chip_step = np.where(keys == 1, 1.3, 0.9) * step
    tokens = spec.workload.tokens_per_step
    before = prior.predict(spec.space, rows)
    assert prior.observe(spec.space, rows[:60], tokens / chip_step[:60])
    assert not prior.observe(spec.space, rows[:60], tokens / chip_step[:60])  # nothing new
    assert abs(prior.families[1][0] - 1.3) < 0.02 and abs(prior.families[0][0] - 0.9) < 0.02
    after = prior.predict(spec.space, rows[60:])
    np.testing.assert_allclose(after, tokens / chip_step[60:], rtol=0.02)
    assert not np.allclose(before[60:], after)


def test_a_study_of_another_backend_gets_the_registrys_simulator_for_its_soc() -> None:
    spec = load_spec(ROOT / "studies" / "gemm_npu_910b2.toml")
    prior = spec_simulator_prior(spec)
    assert prior.name == "simulator Ascend910B2"
    rows = spec.space.sample_feasible(20, np.random.default_rng(1))
    assert np.isfinite(prior.predict(spec.space, rows)).all()
