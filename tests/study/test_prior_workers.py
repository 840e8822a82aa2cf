"""A prior reaches every worker process of a study, or the run is refused in one line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import optuna
import pytest

from aoe_optuna.attrs import GP_PRIOR_ATTR, WORKER_ATTR
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.spec.prior import PriorSource
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.run.objective import count_measured
from aoe_optuna.study.session import SamplerRequest, SessionError, StudySession

ROOT = Path(__file__).resolve().parents[2]
QWEN = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


class _Flat:
    """A prior object of this process only."""

    name = "flat"

    def predict(self, space, rows: np.ndarray) -> np.ndarray:
        return np.ones(rows.shape[0])


def test_a_prior_object_is_refused_worker_processes_before_any_starts(tmp_path: Path) -> None:
    session = StudySession.open(f"sqlite:///{tmp_path}/s.db", load_spec(QWEN), "s",
                                SamplerRequest("gp-ucb", seed=0, prior=_Flat()))
    with pytest.raises(SessionError, match="cannot reach worker processes") as refused:
        session.run(Budget(n_measurements=4), n_workers=2)
    assert len(str(refused.value).splitlines()) == 1
    assert count_measured(session.study.get_trials()) == 0


@pytest.mark.slow  # a source study, then two worker processes
def test_the_specs_prior_reaches_every_worker_process(tmp_path: Path) -> None:
    source_url = f"sqlite:///{tmp_path}/source.db"
    StudySession.open(source_url, load_spec(QWEN), "src",
                      SamplerRequest("random", seed=0)).run(Budget(n_measurements=12))
    prior = PriorSource("study", name="src", storage=source_url)
    spec = dataclasses.replace(load_spec(QWEN), prior=prior, prior_doc=prior.document())
    session = StudySession.open(f"sqlite:///{tmp_path}/s.db", spec, "s",
                                SamplerRequest("gp-ucb", seed=0))
    result = session.run(Budget(n_measurements=16), n_workers=2)
    assert result.failed_workers == ()
    trials = session.study.get_trials(states=[optuna.trial.TrialState.COMPLETE])
    with_prior = {t.user_attrs[WORKER_ATTR]["pid"] for t in trials
                  if t.system_attrs.get(GP_PRIOR_ATTR, {}).get("name") == "study src"}
    assert len({t.user_attrs[WORKER_ATTR]["pid"] for t in trials}) == 2
    assert len(with_prior) == 2  # each worker's sampler had the prior
