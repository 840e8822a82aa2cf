"""A study's race of its winners: stored as it goes, not counted, resumed, leased, read."""

from __future__ import annotations

import json
import os
import socket
from datetime import UTC, datetime, timedelta

import optuna
import pytest
from race_fixture import race_spec

from aoe_optuna.attrs import RACE_ATTR
from aoe_optuna.certify.race import RaceRules
from aoe_optuna.process_liveness import start_ticks
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.race import run as race_run
from aoe_optuna.study.race.lease import take_lease
from aoe_optuna.study.race.outcome import certified_of
from aoe_optuna.study.race.record import RaceRecord
from aoe_optuna.study.race.run import stored_certified
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.run.objective import count_measured
from aoe_optuna.study.session import IN_MEMORY, SamplerRequest, StudySession

optuna.logging.set_verbosity(optuna.logging.ERROR)


def session(tmp_path, name="s", race=None, n=12, sqlite=False) -> StudySession:
    """A study of the noisy recorded space after ``n`` measurements: in memory (a real
    Optuna storage, fast), or in an SQLite file."""
    spec = load_spec(race_spec(tmp_path, race if race is not None else {"budget": 1.0}))
    if sqlite:
        s = StudySession.open(f"sqlite:///{tmp_path / 'race.db'}", spec, name,
                              SamplerRequest("random", {}, 0))
    else:
        s = StudySession.open(IN_MEMORY, spec, name, SamplerRequest("random", {}, 0),
                              storage=optuna.storages.InMemoryStorage())
    s.run(Budget(n_measurements=n))
    return s


def test_the_race_is_stored_not_counted_and_its_verdict_is_read_back(tmp_path):
    s = session(tmp_path, sqlite=True)
    before = len(s.study.get_trials(deepcopy=False))
    won = s.certify()
    trials = s.study.get_trials(deepcopy=False)
    assert count_measured(trials) == 12 and len(trials) == before  # no trial was added
    record = RaceRecord.of(s.study)
    assert record is not None and record.done and record.after == 12
    assert won is not None and won.spent == record.spent <= record.budget == 12
    assert won.winner in record.contenders and len(record.contenders) >= 2
    lo, hi = won.interval
    assert lo <= won.value <= hi and won.pcs is not None and 0 <= won.pcs <= 1
    assert set(won.ties) | set(won.slower) | {won.winner} == set(record.contenders)
    again = s.certify()  # finished: read back, nothing re-timed
    assert again == won and RaceRecord.of(s.study).spent == record.spent
    assert stored_certified(s.study, s.spec.race, s.spec.timing_noise) == won


def test_a_race_cut_short_resumes_with_its_re_timings_and_ends_as_an_uncut_one(
        tmp_path, monkeypatch):
    (tmp_path / "whole").mkdir()
    whole = session(tmp_path / "whole", n=12)
    expected = whole.certify()
    (tmp_path / "cut").mkdir()
    cut = session(tmp_path / "cut", n=12)
    calls = []
    real = race_run.run_race

    def stop_after_three(record, params, remeasure, *rest):
        def counted(p, draw):
            if len(calls) == 3:
                raise KeyboardInterrupt
            calls.append(draw)
            return remeasure(p, draw)
        return real(record, params, counted, *rest)

    monkeypatch.setattr(race_run, "run_race", stop_after_three)
    with pytest.raises(KeyboardInterrupt):
        cut.certify()
    monkeypatch.setattr(race_run, "run_race", real)
    assert RaceRecord.of(cut.study).spent == 3 and not RaceRecord.of(cut.study).done
    lines: list[str] = []
    resumed = cut.certify(on_event=lines.append)
    assert lines == ["race: resuming after 3 of 12 re-timings"]
    assert resumed is not None and expected is not None
    assert (resumed.winner, resumed.ties, resumed.spent) == \
        (expected.winner, expected.ties, expected.spent)
    assert RaceRecord.of(cut.study).costs == RaceRecord.of(whole.study).costs


def test_more_search_later_races_again_with_fresh_draws(tmp_path):
    s = session(tmp_path, n=10)
    first = RaceRecord.of(s.study) if s.certify() else None
    assert first is not None
    s.run(Budget(n_measurements=14))
    s.certify()
    second = RaceRecord.of(s.study)
    assert second.after == 14 and second.draw_base == first.next_draw_base
    assert second.earlier == first.spent


def test_noise_free_figures_are_not_raced(tmp_path):
    spec = load_spec(race_spec(tmp_path))
    doc = dict(spec.document)
    doc["backend"] = {**doc["backend"], "noise": "none"}
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(doc))
    s = StudySession.open(IN_MEMORY, load_spec(path), "p", SamplerRequest("random", {}, 0),
                          storage=optuna.storages.InMemoryStorage())
    s.run(Budget(n_measurements=16))
    won = s.certify()
    assert won is not None and won.spent == 0 and won.pcs == 1.0
    assert RACE_ATTR not in s.study.user_attrs
    values = {t.number: t.value for t in s.study.get_trials(deepcopy=False)}
    assert all(values[t] * 1.01 >= values[won.winner] for t in won.ties)
    assert "noise-free" in won.reason


def test_a_race_budget_too_small_to_time_twice_is_not_raced(tmp_path):
    s = session(tmp_path, race={"budget": 0.05}, n=12)  # 0 re-timings
    won = s.certify()
    assert won is not None and won.spent == 0 and "not raced" in won.reason
    assert won.pcs is None and RACE_ATTR not in s.study.user_attrs


def test_the_lease_goes_to_the_first_live_holder(tmp_path):
    from aoe_optuna.study.storage.opening import open_storage

    study = optuna.create_study(storage=open_storage(f"sqlite:///{tmp_path / 'l.db'}"),
                                study_name="l")
    host = socket.gethostname()
    parent = os.getppid()
    study.set_user_attr("race_lease:7:0", {"host": host, "pid": 2**22 + 12345, "started": 1})
    assert take_lease(study, 7) == (True, None)  # a dead holder: the next attempt is mine
    assert study.user_attrs["race_lease:7:1"]["pid"] == os.getpid()
    assert take_lease(study, 7) == (True, None)  # still mine
    live = {"host": host, "pid": parent, "started": start_ticks(parent)}
    study.set_user_attr("race_lease:8:0", live)
    assert take_lease(study, 8) == (False, live)
    away = {"host": "elsewhere", "pid": 1, "started": 1}
    study.set_user_attr("race_lease:9:0", away)
    fresh = datetime.now(UTC).isoformat()
    assert take_lease(study, 9, heartbeat=fresh) == (False, away)
    stale = (datetime.now(UTC) - timedelta(hours=2)).isoformat()
    assert take_lease(study, 9, heartbeat=stale, stale_after_s=3600) == (True, None)


def test_the_lease_key_is_write_once(tmp_path):
    from aoe_optuna.study.storage.opening import open_storage
    from aoe_optuna.study.storage.write_once import set_once

    for url in (f"sqlite:///{tmp_path / 'w.db'}", str(tmp_path / "w.log")):
        storage = open_storage(url)
        study = optuna.create_study(storage=storage, study_name="w")
        assert set_once(study, "race_lease:1:0", {"pid": 1}) == {"pid": 1}
        study.set_user_attr("race_lease:1:0", {"pid": 2})  # a second writer: ignored
        again = optuna.load_study(study_name="w", storage=open_storage(url))
        assert again.user_attrs["race_lease:1:0"] == {"pid": 1}


def test_patience_ends_a_search_whose_proposals_stopped_improving(tmp_path):
    s = session(tmp_path, n=1)
    result = s.run(Budget(n_measurements=16, patience=3, patience_margin=0.5))
    assert "no improvement beyond 50% in the last 3 measurements" in result.stop_reason
    assert count_measured(s.study.get_trials(deepcopy=False)) == 4


def test_a_lucky_first_timing_brings_the_configs_it_hid_into_the_race():
    from aoe_optuna.certify.race import RaceRules
    from aoe_optuna.study.race.record import RaceRecord
    from aoe_optuna.study.race.run import run_race

    true = {0: 1.10, 1: 1.00, 2: 1.02, 3: 1.50}  # 0 was measured at 0.90: a lucky draw
    record = RaceRecord(after=4, contenders=[0], first={0: 0.90}, budget=20, noise=0.01,
                        rules=RaceRules(max_rounds=10))
    run_race(record, {c: {"c": c} for c in true},
             lambda p, draw: (true[p["c"]], None),
             reserve=[(1, 0.97), (2, 1.03), (3, 1.40)], max_contenders=5)
    assert record.contenders == [0, 1, 2] and record.done  # 3 stays out: slower by far
    assert state_leader(record) == 1


def test_a_lucky_first_timing_brings_configs_into_a_race_of_pairs_at_their_round():
    from aoe_optuna.certify.race import RaceRules
    from aoe_optuna.study.race.outcome import state_of
    from aoe_optuna.study.race.record import RaceRecord
    from aoe_optuna.study.race.run import run_race

    true = {0: 1.10, 1: 1.00, 2: 1.02, 3: 1.50}
    record = RaceRecord(after=4, contenders=[0], first={0: 0.90}, budget=20, noise=0.01,
                        rules=RaceRules(max_rounds=10, pairs=True))
    run_race(record, {c: {"c": c} for c in true},
             lambda p, draw: (true[p["c"]], None),
             reserve=[(1, 0.97), (2, 1.03), (3, 1.40)], max_contenders=5)
    # 0 timed alone for its two rounds; 1 and 2 join at round 2, beside it
    assert record.contenders == [0, 1, 2] and record.joined == {1: 2, 2: 2} and record.done
    assert state_leader(record) == 1 and record.spent <= 20
    stored = RaceRecord.from_attr(json.loads(json.dumps(record.as_attr())))
    assert stored is not None and stored.joined == record.joined and stored.rules.pairs
    assert state_of(stored) == state_of(record)


def test_a_race_stored_before_pairs_replays_in_rounds_as_it_was_run():
    from aoe_optuna.certify.race import RaceRules

    raw = RaceRecord(after=4, contenders=[0, 1], first={0: 1.0, 1: 1.0}, budget=8,
                     rules=RaceRules(max_rounds=4)).as_attr()
    del raw["rules"]["pairs"], raw["rules"]["park"], raw["joined"]
    old = RaceRecord.from_attr(raw)
    assert old is not None and not old.rules.pairs and old.rules.park == 0.0
    assert old.joined == {}


def state_leader(record):
    from aoe_optuna.study.race.outcome import certified_of

    return certified_of(record).winner


def test_a_race_read_before_its_first_round_ends_leaves_the_rivals_open():
    """What a worker reading another's race prints before any rival is judged: the
    leader so far, every rival open, no probability of a correct selection."""
    rules = RaceRules(epsilon=0.01, max_rounds=10, pairs=True)
    record = RaceRecord(after=10, contenders=[19, 3, 7], first={19: 1.0, 3: 1.01, 7: 1.02},
                        budget=20, rules=rules, noise=0.01)
    record.add(19, 1.0, None)
    got = certified_of(record)
    assert got is not None and got.winner == 19 and got.open == (3, 7) and got.pcs is None
    assert "not known yet" in got.describe() and not got.done
