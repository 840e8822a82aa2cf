"""claims: a config held by another trial (params, claim or enqueued) is never claimed twice."""

from __future__ import annotations

import optuna
import pytest

from aoe_optuna.attrs import CLAIM_ATTR
from aoe_optuna.samplers.claims import FinishedClaims, claim_first_free

optuna.logging.set_verbosity(optuna.logging.WARNING)

A = {"tile_m": 16, "pipeline": "double_buffer"}
B = {"tile_m": 32, "pipeline": "double_buffer"}
C = {"pipeline": "none", "tile_m": 64}  # key order does not matter
D = {"tile_m": 128, "pipeline": "none"}


# Every check runs with and without the index of finished trials: same answers.
INDEXES = pytest.mark.parametrize("index", [None, FinishedClaims], ids=["plain", "indexed"])


@INDEXES
def test_taken_by_params_by_a_live_claim_or_an_enqueued_trial(index) -> None:
    finished = index() if index else None
    study = optuna.create_study()
    done = study.ask()
    done.suggest_int("tile_m", 16, 256, step=16)
    study.tell(done, 1.0)
    held = dict(study.trials[0].params)
    live = study.ask()
    study._storage.set_trial_system_attr(live._trial_id, CLAIM_ATTR, dict(B))
    study.enqueue_trial(dict(C))
    me = study.ask()  # takes the enqueued trial: C is its own fixed params
    mine = study.ask()
    frozen = study._storage.get_trial(mine._trial_id)
    got = claim_first_free(study, frozen, [held, B, {"tile_m": 64, "pipeline": "none"}, A],
                           finished=finished)
    assert got == A  # done's params, the live claim and the enqueued config were all taken
    assert study._storage.get_trial(mine._trial_id).system_attrs[CLAIM_ATTR] == A
    assert me.number != mine.number
    # a claim is seen by the next sampler, and nothing is free once every candidate is held
    other = study._storage.get_trial(study.ask()._trial_id)
    assert claim_first_free(study, other, [A, B], finished=finished) is None
    assert claim_first_free(study, other, [A, D], finished=finished) == D


@INDEXES
def test_a_finished_trials_claim_no_longer_holds_but_its_params_do(index) -> None:
    finished = index() if index else None
    study = optuna.create_study()
    t = study.ask()
    study._storage.set_trial_system_attr(t._trial_id, CLAIM_ATTR, dict(A))
    study.tell(t, state=optuna.trial.TrialState.FAIL)  # claimed A, never measured it
    nxt = study._storage.get_trial(study.ask()._trial_id)
    assert claim_first_free(study, nxt, [A], finished=finished) == A


def test_the_index_picks_up_a_trial_that_finishes_after_it_was_seen_live() -> None:
    study = optuna.create_study()
    finished = FinishedClaims()
    first = study.ask()
    first.suggest_int("tile_m", 16, 256, step=16)  # live, holding tile_m only
    me = study._storage.get_trial(study.ask()._trial_id)
    taken = {"tile_m": first.params["tile_m"]}
    assert claim_first_free(study, me, [taken, A], finished=finished) == A  # held while live
    study.tell(first, 1.0)
    later = study._storage.get_trial(study.ask()._trial_id)
    # finished now: held by the index, not by the live comparison
    live = finished.update(study.get_trials(deepcopy=False))
    assert [t.number for t in live] == [me.number, later.number]
    assert finished.holds(taken)
    assert claim_first_free(study, later, [taken, D], finished=finished) == D
