"""The kernel-set tuner on the simulator: the budget is exact, a resume continues where the
run stopped, no (config, M) is measured twice, and its sets cover the mix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aoe_optuna.kernel_set import outcome
from aoe_optuna.kernel_set.operator_mix import from_model
from aoe_optuna.kernel_set.tuner import KernelSetTuner, TunerOptions
from aoe_optuna.kernel_set.tuning_shapes import tuning_shapes
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.loader import load_spec, spec_from_dict
from aoe_optuna.study.storage.opening import open_storage
from aoe_optuna.workload.shape_mix import range_mix

ROOT = Path(__file__).resolve().parents[2]
SPEC = spec_from_dict({
    "op_name": "TinyGemm",
    "search_space": {"tile_m": [16, 32, 64, 128], "tile_n": [128, 256], "tile_k": [64],
                     "pipeline": [2], "l1_prefetch": [1], "output_align": [0, 1]},
    "hardware": {"soc": "Ascend910B2"},
    "workload": {"model": "qwen2.5-7b", "phase": "decode", "batch": 1},
    "baseline": {"tile_m": 128, "tile_n": 256, "tile_k": 64, "pipeline": 2,
                 "l1_prefetch": 1, "output_align": 1},
    "backend": {"name": "simulator", "noise": 0.01}}, source="test")


@pytest.mark.slow  # GP fits over a few rounds: seconds
def test_a_run_resumes_to_an_exact_budget_and_never_measures_a_pair_twice(tmp_path):
    steps = from_model(SPEC, range_mix({"batch": {"low": 1, "high": 48}}, "t"))
    ops = steps.operators[:1]  # qkv_proj
    tuned = [tuning_shapes(op.m, op.weight, 6) for op in ops]
    url = f"sqlite:///{tmp_path / 'ks.db'}"
    # the last half of each budget checks what the sets ship (the checks' path too)
    options = TunerOptions(budget=12, warmup=6, round=2, pool=200, verify=0.5)

    def tuner(budget: int) -> KernelSetTuner:
        return KernelSetTuner(open_storage(url), "run", SPEC, ops, tuned, make_backend(SPEC),
                              TunerOptions(**{**options.__dict__, "budget": budget}))

    first = tuner(12)
    first.run()
    assert first.used == 12
    unit = first.units[0]
    assert np.array_equal(unit.study.measured.rows[0], SPEC.space.index(SPEC.baseline))
    again = tuner(18)
    assert again.used == 12  # read back from the storage
    again.run()
    assert again.used == 18
    got = again.units[0].study.measured
    pairs = [(int(SPEC.space.flat_id(r[None, :])[0]), m) for r, m in zip(got.rows, got.ms,
                                                                          strict=True)]
    assert len(pairs) == len(set(pairs)) == 18
    assert set(got.ms) <= set(tuned[0].tolist())
    results = outcome.outcomes(again.units)
    means = outcome.outcomes(again.units, risk=0.0)
    assert np.all(results[0].latency_s > means[0].latency_s)  # chosen a deviation above
    for choice in results[0].sets:
        assert choice.ranges[0].low == 1 and choice.ranges[-1].high == 48
    assert results[0].sets[-1].weighted_s >= results[0].limit_s - 1e-12



@pytest.mark.slow  # GP fits over a few rounds: seconds
def test_an_interrupted_run_chooses_what_its_stored_measurements_say(tmp_path):
    """The sets are a function of the stored measurements, not of the warm-started fits
    a process made while it measured: a run that measured all along, and one interrupted
    after 12 measurements and resumed, each choose what a process reading their storage
    afresh chooses."""
    steps = from_model(SPEC, range_mix({"batch": {"low": 1, "high": 48}}, "t"))
    ops = steps.operators[:1]
    tuned = [tuning_shapes(op.m, op.weight, 6) for op in ops]
    options = TunerOptions(budget=20, warmup=6, round=2, pool=200)

    def tuner(name: str, budget: int) -> KernelSetTuner:
        return KernelSetTuner(open_storage(f"sqlite:///{tmp_path / name}"), "run", SPEC, ops,
                              tuned, make_backend(SPEC),
                              TunerOptions(**{**options.__dict__, "budget": budget}))

    whole = tuner("whole.db", 20)
    whole.run()  # refitted, warm-started, after every round
    cut = tuner("cut.db", 12)
    cut.run()
    outcome.outcomes(cut.units)  # the interrupted process chose once before it stopped
    resumed = tuner("cut.db", 20)
    resumed.run()  # its fits warm-started from its own first fit at 12
    assert resumed.used == whole.used == 20
    for ran, name in ((whole, "whole.db"), (resumed, "cut.db")):
        chosen = outcome.outcomes(ran.units)[0]
        afresh = outcome.outcomes(tuner(name, 20).units)[0]
        assert afresh.configs == chosen.configs
        assert np.array_equal(afresh.latency_s, chosen.latency_s)
        assert afresh.sets == chosen.sets


@pytest.mark.slow  # GP fits over a few rounds: seconds
def test_the_checks_are_pairs_the_sets_ship_that_no_measurement_saw(tmp_path):
    steps = from_model(SPEC, range_mix({"batch": {"low": 1, "high": 48}}, "t"))
    ops = steps.operators[:1]
    tuned = [tuning_shapes(op.m, op.weight, 6) for op in ops]
    run = KernelSetTuner(open_storage(f"sqlite:///{tmp_path / 'ks.db'}"), "run", SPEC, ops,
                         tuned, make_backend(SPEC),
                         TunerOptions(budget=10, warmup=6, round=2, pool=200, verify=0.0))
    run.run()
    unit = run.units[0]
    got = unit.study.measured
    measured_ids = {int(f) for f in SPEC.space.flat_id(np.array(got.rows))}
    checks = unit.checks(50)
    assert checks, "a set of 8 over 6 shapes from 10 measurements ships unmeasured pairs"
    for row, m, exposure in checks:
        fid = int(SPEC.space.flat_id(row[None, :])[0])
        assert fid in measured_ids  # a config that built and ran
        assert (fid, m) not in got.pairs and m in tuned[0].tolist()
        assert exposure > 0
    assert [c[2] for c in checks] == sorted((c[2] for c in checks), reverse=True)
    for row, m, _ in checks:  # measured, they are no longer checks
        run._measure(unit, row, m)
    assert not {(int(SPEC.space.flat_id(r[None, :])[0]), m) for r, m, _ in unit.checks(50)
                } & {(int(SPEC.space.flat_id(r[None, :])[0]), m) for r, m, _ in checks}


@pytest.mark.slow  # GP fits over a few rounds: seconds
def test_the_budget_follows_each_operators_quota(tmp_path):
    """gate_up_proj is most of a decode step's GEMM time and o_proj a small part: each
    ends within one round of its quota, the floor and its share of the time."""
    steps = from_model(SPEC, range_mix({"batch": {"low": 1, "high": 48}}, "t"))
    ops = [op for op in steps.operators if op.name in ("o_proj", "gate_up_proj")]
    tuned = [tuning_shapes(op.m, op.weight, 6) for op in ops]
    options = TunerOptions(budget=30, warmup=4, round=2, pool=100)
    run = KernelSetTuner(open_storage(f"sqlite:///{tmp_path / 'ks.db'}"), "run", SPEC, ops,
                         tuned, make_backend(SPEC), options)
    run.run()
    counts = [u.measured for u in run.units]
    assert sum(counts) == 30
    assert run.quota[0] >= 0.5 * 30 / 2  # the floor: half of an even split
    assert run.quota[1] > 2 * run.quota[0]
    for n, q in zip(counts, run.quota, strict=True):
        assert abs(n - q) <= options.round


@pytest.mark.slow  # one GP fit: a second or two
def test_an_operators_leaders_are_candidates_of_the_others(tmp_path):
    """Each operator offers its fastest measured config at each tuning shape; another
    operator's candidates hold them (unless it measured them already)."""
    steps = from_model(SPEC, range_mix({"batch": {"low": 1, "high": 48}}, "t"))
    ops = [op for op in steps.operators if op.name in ("o_proj", "gate_up_proj")]
    tuned = [tuning_shapes(op.m, op.weight, 6) for op in ops]
    run = KernelSetTuner(open_storage(f"sqlite:///{tmp_path / 'ks.db'}"), "run", SPEC, ops,
                         tuned, make_backend(SPEC),
                         TunerOptions(budget=12, warmup=6, round=2, pool=50))
    run.run()  # warm-up only: six configs each, each at one shape
    giver, taker = run.units
    got = giver.study.measured
    lead = giver.leaders()
    ids = set(SPEC.space.flat_id(lead).tolist())
    for m in set(got.ms):
        at = [i for i, x in enumerate(got.ms) if x == m]
        fastest = min(at, key=lambda i: got.latency_s[i])
        assert int(SPEC.space.flat_id(np.array(got.rows[fastest])[None, :])[0]) in ids
    assert len(ids) == len(lead) <= len(set(got.ms))
    assert taker.refit()
    done = taker.measured_rows()
    mean = np.stack([taker.model.predict_log(done, int(m))[0] for m in taker.tuned], axis=1)
    cand = taker._candidates(np.random.default_rng(0), 50, done, mean, [], lead)
    own = set(SPEC.space.flat_id(done).tolist())
    assert (ids - own) <= set(SPEC.space.flat_id(cand).tolist())


def test_the_warm_up_tries_each_category_beside_the_baseline(tmp_path):
    """The baseline first, then the baseline with its weights' layout changed (the two
    differ in that choice alone), then a random config."""
    spec = load_spec(str(ROOT / "studies" / "qwen25_7b_prefill_catlass_910b2.json"))
    steps = from_model(spec, range_mix({"seq_len": {"low": 128, "high": 512}}, "t"))
    ops = steps.operators[:1]
    tuned = [tuning_shapes(op.m, op.weight, 6) for op in ops]
    run = KernelSetTuner(open_storage(f"sqlite:///{tmp_path / 'ks.db'}"), "run", spec, ops,
                         tuned, make_backend(spec), TunerOptions(budget=3, warmup=3, pool=50))
    run.run()  # warm-up only
    got = run.units[0].study.measured
    base = spec.space.index(spec.baseline)
    assert np.array_equal(got.rows[0], base)
    flip = np.asarray(got.rows[1])
    assert [spec.space.names[j] for j in np.flatnonzero(flip != base)] == ["layout_b"]
    assert spec.space.config(flip)["layout_b"] == "zN"
    assert not np.array_equal(got.rows[2], base) and not np.array_equal(got.rows[2], flip)
