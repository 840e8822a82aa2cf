"""A build pool run in virtual time: proposals in the clock's order, the sampler seeing
as RUNNING exactly the trials in flight on the clock, and the clock's figures."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.bench.virtual_pool import VirtualPool
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.run.pipeline_clock import jobs_of, pool_finish_times
from aoe_optuna.study.session import SamplerRequest, StudySession

SPECS = Path(__file__).resolve().parents[2] / "studies"


class RunningSeen(optuna.samplers.RandomSampler):
    """Random proposals that note how many trials were RUNNING when each was made."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed=seed)
        self.seen: list[int] = []

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.seen.append(len(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))))
        super().before_trial(study, trial)


def test_a_chunk_runs_on_the_pools_clock_with_its_trials_in_flight(tmp_path: Path) -> None:
    spec = load_spec(SPECS / "qwen25_7b_decode_910b2.json")
    session = StudySession.open(f"sqlite:///{tmp_path / 's.db'}", spec,
                                sampler=SamplerRequest("random", seed=1))
    sampler = RunningSeen(1)
    session.study.sampler = sampler
    pool = VirtualPool(builders=3, devices=1)
    pool.run_chunk(session.study, session.objective(), Budget(n_measurements=10))
    trials = session.study.get_trials(deepcopy=False)
    measured = sorted((t for t in trials if is_measured(t)), key=lambda t: t.number)
    assert len(measured) == 10 and not any(t.state == TrialState.RUNNING for t in trials)
    # the sampler saw the trials in flight: 1, 2, 3, then 4 (the window) while it lasts
    assert sampler.seen[:4] == [1, 2, 3, 4] and max(sampler.seen) == 4
    ends = [pool.ends[(session.study.study_name, t.number)] for t in measured]
    assert ends == pytest.approx(pool_finish_times(jobs_of(measured), 3, 1, 4))
    # a second chunk starts when the first ended, its builders idle until then
    first_end = pool.now_s
    assert first_end == pytest.approx(max(ends))
    pool.run_chunk(session.study, session.objective(), Budget(n_measurements=12))
    later = [v for (_, n), v in pool.ends.items() if n > measured[-1].number]
    assert len(later) == 2 and min(later) >= first_end + 30.0  # a build of 30 s first


def test_a_window_wider_than_the_chunk_holds_the_whole_chunk_in_flight(
        tmp_path: Path) -> None:
    spec = load_spec(SPECS / "qwen25_7b_decode_910b2.json")
    session = StudySession.open(f"sqlite:///{tmp_path / 's.db'}", spec,
                                sampler=SamplerRequest("random", seed=2))
    sampler = RunningSeen(2)
    session.study.sampler = sampler
    pool = VirtualPool(builders=184, devices=8)
    pool.run_chunk(session.study, session.objective(), Budget(n_measurements=16))
    # no thread per trial: the last of the 16 is proposed with the other 15 pending (an
    # infeasible proposal in between is told at once and leaves the count)
    assert max(sampler.seen) == 16 and pool.most_in_flight == 15
    assert pool.now_s < 2 * 30.0  # all 16 built at once on 184 builders, timed on 8 cards
