"""A knowledge base entry that remembers how well and where it was measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_optuna.export.from_study import kb_entries
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import (
    UNKNOWN_STAMP,
    KBError,
    certified_fields,
    entry_stamp,
    make_entry,
    validate_entry,
)
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.race.outcome import Certified

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "fixtures" / "kb" / "kb_2851b8d.json"
ENV = {"project": "aoe_optuna 0.1.0", "backend": "cpu", "compiler": "gcc 12", "cpu": "x"}
KEY = dict(soc="Ascend910B2", op="GemmKernel", dtype="fp16", M=512, K=512, N=512,
           layout="row_major")


def entry(**certified):
    fields = certified_fields((9.0, 11.0), [{"tile_m": 32}], 0.97, 12, ENV)
    fields.update(certified)
    return make_entry(**KEY, config={"tile_m": 64}, value=10.0, gain=None, study="s",
                      storage=None, objective="TFLOPS", latency_us=26.8, certified=fields)


def test_a_certified_entry_keeps_interval_ties_pcs_race_and_stamp(tmp_path):
    e = entry()
    assert (e["interval"], e["pcs"], e["race_measurements"]) == ([9.0, 11.0], 0.97, 12)
    assert e["ties"] == [{"tile_m": 32}] and entry_stamp(e) == ENV
    kb = KnowledgeBase()
    kb.merge(e)
    kb.save(tmp_path / "kb.json")
    assert KnowledgeBase.load(tmp_path / "kb.json").entries() == [e]


@pytest.mark.parametrize("field,value,expected", [
    ("interval", [11.0, 9.0], "interval: expected [low, high] of the value"),
    ("pcs", 1.5, "pcs: expected a probability from 0 to 1"),
    ("race_measurements", -1, "race_measurements: expected a count of re-timings"),
    ("env", {"compiler": ""}, "env: expected an object of names to texts"),
    ("ties", [{"bogus": 1}], "(Ascend910B2/GemmKernel/fp16 512x512x512 row_major): ties[0]: "
     "config: expected the GEMM's parameters"),
])
def test_bad_certified_fields_are_refused_naming_the_field(field, value, expected):
    with pytest.raises(KBError) as err:
        entry(**{field: value})
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_an_old_knowledge_base_loads_as_it_is_stamped_unknown(tmp_path):
    kb = KnowledgeBase.load(OLD)
    assert {json.dumps(entry_stamp(e)) for e in kb} == {json.dumps(UNKNOWN_STAMP)}
    kb.save(tmp_path / "kb.json")
    assert json.loads((tmp_path / "kb.json").read_text()) == json.loads(OLD.read_text())


def test_a_recheck_replaces_the_entry_it_read_and_nothing_else():
    kb = KnowledgeBase()
    held = entry()
    kb.merge(held)
    lower = {**held, "value": 8.0, "env": {**ENV, "compiler": "gcc 13"}}
    assert kb.put_rechecked(held, lower) and kb.entries()[0]["value"] == 8.0
    assert not kb.put_rechecked(held, {**held, "value": 7.0})  # no longer what it read


def test_a_one_gemm_export_carries_the_certified_latency_interval_and_ties():
    spec = load_spec(ROOT / "studies" / "gemm_4096_910b2.toml")
    gemm = spec.workload.gemms[0]
    per_call = spec.workload.tokens_per_step / gemm.count
    value = per_call / 500e-6  # 500 us a call
    won = Certified(winner=3, value=value, interval=(value / 1.02, value * 1.01),
                    first_value=value * 1.01, ties=(5,), open=(), slower=(), pcs=0.9, spent=8,
                    rounds=4, contenders=(3, 5, 6), epsilon=0.01, done=True, reason="decided")

    from types import SimpleNamespace

    trial = SimpleNamespace(params={"tile_m": 128, "tile_k": 64, "tile_n": 256}, number=3,
                            value=value * 1.01, user_attrs={})
    tie = {"tile_m": 64, "tile_k": 64, "tile_n": 256}
    [e] = kb_entries(spec, trial, None, "s", "sqlite:///x.db", won, ENV, {5: tie})
    assert e["latency_us"] == pytest.approx(500.0)
    lo, hi = e["latency_interval_us"]
    assert lo == pytest.approx(500 / 1.01, rel=1e-4) and hi == pytest.approx(510.0, rel=1e-4)
    assert e["interval"][0] < e["value"] < e["interval"][1]
    assert e["ties"] == [validate_entry({**e, "config": tie})["config"]]
    assert (e["pcs"], e["race_measurements"], e["env"]) == (0.9, 8, ENV)
