"""The session's entry points for the studies that are not a spec's own: the one sampler
rule, a study on a bare space (an operator run's kernel, a bench run on a recorded
space), a run found before it is written to (an operator run's parent study)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from aoe_optuna.attrs import LAYER_OP_ATTR, SPACE_PARAMS_ATTR
from aoe_optuna.samplers.registry import DEFAULT_SAMPLER
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.spec.stored import SAMPLER_ATTR
from aoe_optuna.study.create import StudyError
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.run.objective import Evaluator, count_measured
from aoe_optuna.study.session import (
    IN_MEMORY,
    SamplerChoice,
    SamplerRequest,
    SessionError,
    SpaceSession,
    StoredPlan,
    StudySession,
    choose_sampler,
    find_study,
)

ROOT = Path(__file__).resolve().parents[2]
QWEN = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


def test_one_rule_picks_the_sampler_of_a_new_a_resumed_and_a_followed_study() -> None:
    stored = ("random", {"n_startup_trials": 3}, 11)
    new = choose_sampler(SamplerRequest())
    assert (new.name, new.kwargs, new.stored) == (DEFAULT_SAMPLER, {}, False)
    assert isinstance(new.seed, int)
    # a named sampler is the request's alone: its kwargs (or none), its seed (or a drawn one)
    assert choose_sampler(SamplerRequest("random", None, 5), stored) == SamplerChoice(
        "random", {}, 5)
    # no name: the stored one, kwargs and seed replaced only where the request gives them
    assert choose_sampler(SamplerRequest(), stored) == SamplerChoice(
        "random", {"n_startup_trials": 3}, 11, stored=True)
    assert choose_sampler(SamplerRequest(seed=7), stored) == SamplerChoice(
        "random", {"n_startup_trials": 3}, 7, stored=True)


def kernel_session(url: str, plan: dict, **how) -> SpaceSession:
    spec = load_spec(QWEN)
    return SpaceSession.open(url, "k", spec.space, Evaluator.of_spec(spec),
                             SamplerRequest("random", seed=4), baseline=spec.baseline,
                             plan=StoredPlan(LAYER_OP_ATTR, plan, "problem"), metric="calls/s",
                             **how)


def test_a_space_study_stores_its_plan_sampler_and_names_and_runs_to_the_budget(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/k.db"
    session = kernel_session(url, {"rows": 8})
    study = optuna.load_study(study_name="k", storage=url)
    assert study.user_attrs[LAYER_OP_ATTR] == {"rows": 8}
    assert study.user_attrs[SAMPLER_ATTR] == {"name": "random", "kwargs": {}, "seed": 4}
    assert study.user_attrs[SPACE_PARAMS_ATTR] == list(session.space.names)
    assert study.metric_names == ["calls/s"]
    assert session.enqueue_baseline() and not session.enqueue_baseline()  # once
    result = session.run(Budget(n_measurements=5))
    assert count_measured(study.get_trials()) == 5, result.stop_reason
    assert session.baseline_trial() is not None  # measured first


def test_a_space_study_holding_another_plan_is_refused_and_left_as_it_was(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/k.db"
    kernel_session(url, {"rows": 8})
    before = optuna.load_study(study_name="k", storage=url).user_attrs
    with pytest.raises(StudyError, match=r"holds another problem \(rows: 8 stored, 16 asked\)"):
        kernel_session(url, {"rows": 16})
    assert optuna.load_study(study_name="k", storage=url).user_attrs == before


def test_a_worker_on_a_space_study_writes_nothing_and_draws_with_its_own_seed(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/k.db"
    kernel_session(url, {"rows": 8})
    before = optuna.load_study(study_name="k", storage=url).user_attrs
    spec = load_spec(QWEN)
    worker = SpaceSession.open(url, "k", spec.space, Evaluator.of_spec(spec),
                               SamplerRequest(), worker_index=2)
    assert worker.sampler_choice == SamplerChoice("random", {}, 4, stored=True)
    def first_draw(sampler: optuna.samplers.RandomSampler) -> int:
        return int(sampler._rng.rng.randint(2**30))

    assert first_draw(worker.study.sampler) == first_draw(
        optuna.samplers.RandomSampler(seed=6))  # the stored seed + its index
    assert optuna.load_study(study_name="k", storage=url).user_attrs == before


def test_a_space_study_refused_its_sampler_options_leaves_no_file(tmp_path: Path) -> None:
    spec = load_spec(QWEN)
    with pytest.raises(SessionError, match="does not accept"):
        SpaceSession.open(f"sqlite:///{tmp_path}/k.db", "k", spec.space,
                          Evaluator.of_spec(spec), SamplerRequest("random", {"no_such": 1}))
    assert list(tmp_path.iterdir()) == []


def test_a_study_in_memory_is_refused_worker_processes() -> None:
    spec = load_spec(QWEN)
    session = SpaceSession.open(IN_MEMORY, "m", spec.space, Evaluator.of_spec(spec),
                                SamplerRequest("random", seed=0),
                                storage=optuna.storages.InMemoryStorage(),
                                worker_module="aoe_optuna.study.worker")
    with pytest.raises(SessionError, match="in memory"):
        session.run(Budget(n_measurements=2), n_workers=2)


def test_find_study_reads_a_run_before_writing_and_refuses_one_with_no_spec(
        tmp_path: Path) -> None:
    missing = f"sqlite:///{tmp_path}/missing.db"
    with pytest.raises(SessionError, match="does not exist"):
        find_study(missing, "p", None)
    assert list(tmp_path.iterdir()) == []
    url = f"sqlite:///{tmp_path}/s.db"
    spec = load_spec(QWEN)
    new = find_study(url, "p", spec)
    assert (new.spec, new.attrs) == (spec, {})
    StudySession.open(url, spec, "p", SamplerRequest("random", seed=1))
    resumed = find_study(url, "p", None)  # the stored spec and settings
    assert resumed.spec.canonical() == spec.canonical()
    assert resumed.attrs[SAMPLER_ATTR]["seed"] == 1
    with pytest.raises(SessionError, match="pass --config"):
        find_study(url, "other", None)
