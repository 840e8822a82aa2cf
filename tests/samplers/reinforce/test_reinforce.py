"""ReinforceSampler: feasible, never repeated, deterministic, resumable, learns, transfers."""

from __future__ import annotations

import json

import numpy as np
import optuna
import pytest
import torch

from aoe_optuna.samplers.registry import make_sampler
from aoe_optuna.samplers.reinforce import PolicyMismatchError, ReinforceSampler
from aoe_optuna.samplers.reinforce._features import FEATURE_NAMES, no_features
from aoe_optuna.samplers.reinforce._learner import LearnerSettings, ReinforceLearner
from aoe_optuna.samplers.reinforce._masking import ChoiceMasker
from aoe_optuna.samplers.reinforce._policy_file import load_policy, save_policy
from aoe_optuna.samplers.reinforce._propose import draw_batch
from aoe_optuna.samplers.reinforce.sampler import new_policy
from aoe_optuna.samplers.torch_threads import one_torch_thread as one_thread
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.study.run.objective import ATTR_MEASURED, suggest_config
from tests.samplers.reinforce.test_reinforce_masking import huge_space, small_space

SMALL_BATCH = LearnerSettings(batch_size=4)  # updates every 4 measurements: short tests learn

optuna.logging.set_verbosity(optuna.logging.WARNING)


def synthetic(space: SearchSpace, row: np.ndarray) -> float:
    """A smooth landscape with interactions; its peak is an interior tiling."""
    x = space.encode(row[None, :])[0]
    return float(np.exp(-4 * (x[0] - 0.3) ** 2 - 3 * (x[1] - 0.6) ** 2
                        - 3 * (x[2] - 0.5 + 0.3 * x[0]) ** 2 + 0.3 * x[3]))


def run(space: SearchSpace, sampler: ReinforceSampler, n: int, study: optuna.Study | None = None,
        fail_every: int = 0) -> optuna.Study:
    study = study or optuna.create_study(direction="maximize", sampler=sampler)
    for _ in range(n):
        trial = study.ask()
        config = suggest_config(trial, space)
        row = space.index(config)
        if fail_every and trial.number % fail_every == fail_every - 1:
            trial.set_user_attr(ATTR_MEASURED, True)
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, synthetic(space, row))
    return study


def rows_of(space: SearchSpace, study: optuna.Study) -> np.ndarray:
    return np.stack([space.index(t.params) for t in study.trials])


def tiny_space() -> SearchSpace:
    space = small_space()
    keep = [Param.known(p.name, [16, 256]) if p.name.startswith("tile") else p
            for p in space.params]
    return SearchSpace(keep, space.rules)


def test_never_infeasible_never_repeated_until_exhausted() -> None:
    space = tiny_space()
    n = space.n_feasible
    study = run(space, ReinforceSampler(space=space, seed=3, learner=SMALL_BATCH), n, fail_every=7)
    rows = rows_of(space, study)
    assert space.is_feasible(rows).all()
    assert len(set(space.flat_id(rows).tolist())) == n  # every feasible config, once each



def test_same_seed_same_run_and_other_seed_differs() -> None:
    space = small_space()
    a = rows_of(space, run(space, ReinforceSampler(space=space, seed=5, learner=SMALL_BATCH), 40))
    b = rows_of(space, run(space, ReinforceSampler(space=space, seed=5, learner=SMALL_BATCH), 40))
    c = rows_of(space, run(space, ReinforceSampler(space=space, seed=6, learner=SMALL_BATCH), 40))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_a_fresh_sampler_rebuilds_its_learner_once_then_catches_up() -> None:
    """A resumed study's sampler replays the learner from storage once, then updates it
    trial by trial (that the resumed run is the straight one: tests/samplers/test_contract.py)."""
    space = small_space()
    kw = {"space": space, "seed": 11, "learner": SMALL_BATCH}
    storage = optuna.storages.InMemoryStorage()
    first = optuna.create_study(storage=storage, study_name="s", direction="maximize",
                                sampler=ReinforceSampler(**kw))
    run(space, first.sampler, 18, study=first)
    fresh = ReinforceSampler(**kw)
    resumed = optuna.load_study(storage=storage, study_name="s", sampler=fresh)
    run(space, fresh, 10, study=resumed)
    assert fresh.replays == 1  # rebuilt once, then caught up incrementally


def test_learning_beats_the_untrained_policy() -> None:
    space = small_space()
    masker = ChoiceMasker(space)
    settings = LearnerSettings(batch_size=8)
    gains = []
    with one_thread():
        for seed in range(3):
            gains.append(_gain(space, masker, settings, seed))
    assert min(gains) > 1.3, gains


def _gain(space: SearchSpace, masker: ChoiceMasker, settings: LearnerSettings, seed: int) -> float:
    """Mean objective of the trained policy's draws over the untrained one's."""
    learner = ReinforceLearner(new_policy(space.shape, 64, seed), no_features(), masker, settings)
    untrained = new_policy(space.shape, 64, seed)
    rng = np.random.default_rng(seed)
    for _ in range(12):
        rows = draw_batch(learner.policy, learner.features, masker, rng, 8, settings.explore)
        learner.update(rows, np.array([synthetic(space, r) for r in rows]))
    trained = draw_batch(learner.policy, learner.features, masker, rng, 300)
    base = draw_batch(untrained, learner.features, masker, rng, 300)
    return float(np.mean([synthetic(space, r) for r in trained])
                 / np.mean([synthetic(space, r) for r in base]))


def test_policy_save_load_and_mismatch(tmp_path) -> None:
    space = small_space()
    policy = new_policy(space.shape, 32, 0)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.1)
    path = tmp_path / "policy.safetensors"
    save_policy(path, policy, space, {"note": "test"})
    loaded, info = load_policy(path, space)
    feats = torch.zeros(1, len(FEATURE_NAMES))
    idx = torch.zeros(1, len(space.shape), dtype=torch.int64)
    assert info == {"note": "test"}
    assert torch.equal(policy.step_logits(feats, idx, 2), loaded.step_logits(feats, idx, 2))
    # a sampler started from it proposes from the loaded weights
    make_sampler("reinforce", space=space, seed=0, policy=str(path))
    other = SearchSpace([*space.params[:2], Param.known("tile_n", [16, 32, 64]),
                         *space.params[3:]], space.rules)
    with pytest.raises(PolicyMismatchError) as err:
        ReinforceSampler(space=other, seed=0, policy=str(path))
    msg = str(err.value)
    assert "\n" not in msg and "params.tile_n" in msg and str(path) in msg
    with pytest.raises(PolicyMismatchError, match="no such policy file"):
        ReinforceSampler(space=space, seed=0, policy=str(tmp_path / "missing.safetensors"))


def test_huge_space_feasible_distinct_proposals() -> None:
    space = huge_space()
    sampler = ReinforceSampler(space=space, seed=0, learner=SMALL_BATCH)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for _ in range(12):
        trial = study.ask()
        config = suggest_config(trial, space)
        study.tell(trial, float(sum(config.values())))
    rows = rows_of(space, study)
    assert space.is_feasible(rows).all()
    assert len(set(space.flat_id(rows).tolist())) == len(rows)


def test_pretrain_main_writes_a_loadable_policy(tmp_path) -> None:
    from aoe_optuna.samplers.reinforce.pretrain import main

    spec = tmp_path / "small.json"
    spec.write_text(json.dumps({"search_space": {
        "tile_m": [16, 64, 256], "tile_k": [16, 64, 256], "tile_n": [16, 64, 256],
        "pipeline": [0, 2], "l1_prefetch": [0, 1], "output_align": [0, 1]}}))
    out = tmp_path / "p.safetensors"
    assert main(["--output", str(out), "--spec", str(spec), "--socs", "Ascend910B3",
                 "--steps", "3", "--batch", "8", "--gemms", "1"]) == 0
    from aoe_optuna.spec.loader import load_spec

    policy, info = load_policy(out, load_spec(spec).space)
    assert info["steps"] == 3 and all("910B3" in t for t in info["tasks"])


def test_shipped_policy_loads_or_is_reported_stale() -> None:
    """The shipped policy fits the seed space, or says why in one line."""
    from pathlib import Path

    from aoe_optuna.spec.loader import load_spec

    root = Path(__file__).resolve().parents[3]
    path = root / "studies" / "policies" / "qwen_holdout_seed.safetensors"
    if not path.is_file():
        pytest.skip("no shipped policy")
    space = load_spec(root / "studies" / "qwen25_7b_decode_910b2.json").space
    try:
        load_policy(path, space)
    except PolicyMismatchError as exc:  # a stale file after a feature change: re-run pretraining
        assert "\n" not in str(exc) and str(path) in str(exc)
        pytest.skip(f"shipped policy is stale: {exc}")
    sampler = ReinforceSampler(space=space, seed=0, policy=str(path))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    trial = study.ask()
    row = space.index(suggest_config(trial, space))
    assert space.is_feasible(row[None, :]).all()


def test_observation_cache_reads_each_finished_trial_once_and_sees_new_ones() -> None:
    from aoe_optuna.samplers.reinforce._replay import ObservationCache, TrialRows

    space = small_space()
    study = run(space, ReinforceSampler(space=space, seed=1, learner=SMALL_BATCH), 12, fail_every=5)
    pending = study.ask()
    suggest_config(pending, space)  # RUNNING: not an observation yet
    unmeasured = study.ask()
    suggest_config(unmeasured, space)
    study.tell(unmeasured, state=optuna.trial.TrialState.FAIL)  # failed before measuring
    rows = TrialRows(space)
    cache = ObservationCache(rows)
    first = cache(study.get_trials(deepcopy=False))
    assert [o.number for o in first] == list(range(12))  # completion order, measured fails kept
    assert sum(np.isnan(o.value) for o in first) == 2
    study.tell(pending, 0.5)
    again = cache(study.get_trials(deepcopy=False))
    fresh = ObservationCache(TrialRows(space))(study.get_trials(deepcopy=False))
    assert [o.number for o in again] == [o.number for o in fresh] == [*range(12), pending.number]
    assert again[-1].value == 0.5
