"""StudySession: the one assembly of a study (CLI, workers, Python)."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from aoe_optuna.spec.loader import load_spec
from aoe_optuna.spec.stored import ROOFLINE_ATTR, SAMPLER_ATTR
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.run.objective import count_measured
from aoe_optuna.study.run.worker_pool import WorkerPlan
from aoe_optuna.study.session import SamplerChoice, SamplerRequest, SessionError, StudySession

ROOT = Path(__file__).resolve().parents[2]
QWEN = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


def test_a_study_given_no_seed_records_the_one_it_drew_and_resumes_with_it(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    first = StudySession.open(url, load_spec(QWEN), "s", SamplerRequest("random"))
    seed = first.study.user_attrs[SAMPLER_ATTR]["seed"]
    assert isinstance(seed, int) and first.sampler_choice.seed == seed
    resumed = StudySession.open(url, study_name="s")  # storage and name only
    assert resumed.sampler_choice == SamplerChoice("random", {}, seed, stored=True)


def test_the_same_seed_gives_the_same_trials(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        session = StudySession.open(f"sqlite:///{tmp_path}/{name}.db", load_spec(QWEN), "s",
                                    SamplerRequest("gp-ucb", seed=3))
        session.run(Budget(n_measurements=12))
        runs.append([t.params for t in session.study.trials])
    assert runs[0] == runs[1]


def test_the_evaluator_measures_against_the_roofline_the_study_stored(tmp_path: Path) -> None:
    session = StudySession.open(f"sqlite:///{tmp_path}/s.db", load_spec(QWEN), "s")
    assert session.evaluator().roofline == session.spec.roofline_tokens_per_s()
    session.study.set_user_attr(ROOFLINE_ATTR, 123.0)  # e.g. made with an older profile
    assert session.evaluator().roofline == 123.0


def test_a_refused_session_creates_no_storage(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="does not exist"):
        StudySession.open(f"sqlite:///{tmp_path}/missing.db", study_name="x")
    with pytest.raises(SessionError, match="does not accept"):
        StudySession.open(f"sqlite:///{tmp_path}/new.db", load_spec(QWEN), "x",
                          SamplerRequest("random", {"no_such_option": 1}))
    assert list(tmp_path.iterdir()) == []


def test_workers_get_the_storage_url_in_their_environment_not_their_command_line() -> None:
    url = "postgresql+psycopg://u:secret@db/aoe"
    plan = WorkerPlan(url, "s", SamplerChoice("random", {}, 5), Budget(n_measurements=4))
    assert "secret" not in " ".join(plan.argv(0))


@pytest.mark.slow  # worker processes
def test_a_session_runs_on_worker_processes_to_the_exact_budget(tmp_path: Path) -> None:
    session = StudySession.open(f"sqlite:///{tmp_path}/s.db", load_spec(QWEN), "s",
                                SamplerRequest("random", seed=1))
    result = session.run(Budget(n_measurements=16), n_workers=2)
    assert result.failed_workers == ()
    assert count_measured(session.study.get_trials()) == 16
    assert not [t for t in session.study.get_trials()
                if t.state == optuna.trial.TrialState.RUNNING]


def test_no_layer_below_the_cli_starts_the_cli() -> None:
    """A worker is a study-level entry point; import-linter cannot see ``-m`` strings."""
    package = ROOT / "aoe_optuna"
    offenders = [str(p.relative_to(ROOT)) for p in package.rglob("*.py")
                 if "cli" not in p.relative_to(package).parts[:1]
                 and ("aoe_optuna.cli" in p.read_text() or "--worker\"" in p.read_text())]
    assert offenders == []
