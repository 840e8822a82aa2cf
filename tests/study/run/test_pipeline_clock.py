"""The virtual clock of a build pool, and the time split the summary shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_optuna.backends.build_time import BUILD_TIMES, build_time
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.device_lease import LEASE_DIR_ENV
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.run.pipeline_clock import (
    Job,
    pool_finish_times,
    pooled_clock_s,
    serial_finish_times,
)
from aoe_optuna.study.run.time_split import TimeSplit
from aoe_optuna.study.session import SamplerRequest, StudySession

SPECS = Path(__file__).resolve().parents[3] / "studies"


def test_serial_is_the_sum_of_builds_and_timings() -> None:
    assert serial_finish_times([Job(3, 1), Job(2, 1)]) == [4, 7]


def test_one_builder_overlaps_each_build_with_the_last_timing() -> None:
    # build 2 s, time 2 s: after the first, one measurement every 2 s, not every 4
    ends = pool_finish_times([Job(2, 2)] * 4, builders=1)
    assert ends == [4, 6, 8, 10]


def test_builds_on_b_builders_feed_one_device() -> None:
    jobs = [Job(30, 1)] * 30
    serial = serial_finish_times(jobs)[-1]
    pooled = pool_finish_times(jobs, builders=15)[-1]
    # two waves of 15 builds; the second's later proposals wait for the first's timings
    # (16 trials in flight), so its builds end one timing apart
    assert serial == 930 and pooled == 75
    # eight devices time the first wave at once, and let 23 trials be in flight
    assert pool_finish_times(jobs, builders=15, devices=8)[-1] == 62


def test_in_flight_holds_back_proposals() -> None:
    # two builders, but only two trials at once: the third waits for the first to end
    ends = pool_finish_times([Job(10, 1)] * 3, builders=2, in_flight=2)
    assert ends == [11, 12, 22]


def test_counts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="builders and devices: expected positive"):
        pool_finish_times([Job(1, 1)], builders=0)


def test_every_build_time_says_where_it_comes_from() -> None:
    assert all(b.seconds > 0 and b.source for b in BUILD_TIMES.values())
    with pytest.raises(KeyError, match="no build time for gemm/cutlass; known: gemm/seed"):
        build_time("gemm", "cutlass")


@pytest.mark.slow
def test_a_simulator_study_on_builders_reports_the_pool_clock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "leases"))
    spec = load_spec(SPECS / "qwen25_7b_decode_910b2.json")
    session = StudySession.open("sqlite:///" + str(tmp_path / "s.db"), spec,
                                sampler=SamplerRequest("random", seed=2))
    result = session.run(Budget(n_measurements=12), builders=3)
    trials = session.study.get_trials(deepcopy=False)
    split = TimeSplit.of(trials)
    assert split.builders == 3 and split.build_s == pytest.approx(12 * 30.0)
    assert split.pooled_s == pooled_clock_s(trials) == pytest.approx(result.progress.virtual_s)
    # 12 builds of 30 s on 3 builders: four waves, each timing hidden behind the next build
    assert 4 * 30.0 <= split.pooled_s < 4 * 30.0 + 12 * 1.0 < split.serial_s
    assert any(item.startswith("on 3 builders") for item in split.items())
