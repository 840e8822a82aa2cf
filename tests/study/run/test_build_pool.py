"""The build pool on the real cpu backend: builds ahead, one timing at a time, no repeats."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aoe_optuna.attrs import ATTR_BUILD_S, ATTR_SURPLUS
from aoe_optuna.backends.cpu.backend import CpuBackend
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.build_pool import (
    ATTR_QUEUE_S,
    ATTR_TIME_S,
    ATTR_TIMED_AT,
    PoolPlan,
    default_builders,
    pinned,
    usable_cpus,
)
from aoe_optuna.study.run.device_lease import LEASE_DIR_ENV
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.session import SamplerRequest, StudySession
from tests.study.run.cpu_study import cpu_spec, measured

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def lease_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "leases"))
    return tmp_path / "leases"


def test_the_timing_core_is_not_a_build_core_when_there_are_two() -> None:
    plan = PoolPlan.for_host(default_builders())
    cpus = usable_cpus()
    assert plan.builders == max(1, len(cpus) - 1)
    assert plan.timing_cpus <= set(cpus) and len(plan.timing_cpus) == 1
    if len(cpus) > 1:
        assert not plan.timing_cpus & plan.build_cpus
    assert plan.lease.device == f"cpu-core-{min(plan.timing_cpus)}"
    assert plan.threads == plan.builders + 1


def test_a_named_device_pins_nothing() -> None:
    plan = PoolPlan.for_host(3, "npu-2")
    assert plan.lease.device == "npu-2" and not plan.build_cpus and not plan.timing_cpus


def test_pinned_puts_the_thread_back() -> None:
    before = os.sched_getaffinity(0)
    core = min(before)
    with pinned(frozenset({core})):
        assert os.sched_getaffinity(0) == {core}
    assert os.sched_getaffinity(0) == before


def test_zero_builders_is_refused() -> None:
    with pytest.raises(ValueError, match="builders: expected a positive number, got 0"):
        PoolPlan.for_host(0)


def test_a_budget_caps_the_trials_in_flight() -> None:
    """No more trials in flight than the measurements left: one past them could only be
    made to be pruned (--builders 10000 on a budget of 20 made 197 trials)."""
    plan = PoolPlan.for_host(15)
    assert plan.at_most(None) is plan and plan.at_most(16) is plan
    five = plan.at_most(5)
    assert (five.threads, five.builders, five.lease) == (5, 15, plan.lease)  # all may build
    assert plan.at_most(1).threads == plan.at_most(0).threads == 1


@pytest.mark.slow
def test_a_run_makes_no_trial_its_budget_cannot_use(tmp_path: Path) -> None:
    spec = load_spec(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
    session = StudySession.open(f"sqlite:///{tmp_path / 's.db'}", spec,
                                sampler=SamplerRequest("random", seed=4))
    result = session.run(Budget(n_measurements=3), builders=15)
    trials = session.study.get_trials(deepcopy=False)
    assert result.progress.measured == 3
    assert {t.user_attrs["in_flight"] for t in trials if "in_flight" in t.user_attrs} == {3}
    # A proposal still being checked counts against the budget until it turns out
    # infeasible (the guard is cautious), so near the end a thread may make a trial the
    # guard prunes as surplus: a few, fewer than the trials in flight, never per builder.
    assert len([t for t in trials if t.user_attrs.get(ATTR_SURPLUS)]) <= 2


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["gp-ucb", "reinforce"])
def test_pool_times_one_at_a_time_and_measures_no_config_twice(
        tmp_path: Path, sampler: str) -> None:
    session = StudySession.open(f"sqlite:///{tmp_path / 'pool.db'}", cpu_spec(tmp_path / "w"),
                                sampler=SamplerRequest(sampler, seed=3))
    result = session.run(Budget(n_measurements=8), builders=2)
    trials = measured(session.study)
    assert result.progress.measured == len(trials) == 8
    configs = {tuple(sorted(t.params.items())) for t in trials}
    assert len(configs) == 8
    windows = sorted((t.user_attrs[ATTR_TIMED_AT], t.user_attrs[ATTR_TIMED_AT]
                      + t.user_attrs[ATTR_TIME_S]) for t in trials)
    for (_, end), (start, _) in zip(windows, windows[1:], strict=False):
        assert start >= end - 0.01  # the lease: one timing after another
    for t in trials:
        assert t.user_attrs[ATTR_BUILD_S] >= 0 and t.user_attrs[ATTR_QUEUE_S] >= 0
        assert t.user_attrs["cost_s"] >= t.user_attrs[ATTR_BUILD_S]


@pytest.mark.slow
def test_a_failed_build_is_a_build_failure_as_without_a_pool(tmp_path: Path) -> None:
    backend = CpuBackend(work_dir=tmp_path / "w", max_seconds=0.05, fault="build")
    session = StudySession.open(f"sqlite:///{tmp_path / 'fail.db'}", cpu_spec(tmp_path / "w"),
                                sampler=SamplerRequest("random", seed=1), backend=backend)
    session.run(Budget(n_measurements=3), builders=1)
    trials = measured(session.study)
    assert len(trials) == 3
    assert {t.user_attrs.get("failure_kind") for t in trials} == {"build"}
