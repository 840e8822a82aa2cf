"""Benchmark metrics against hand computation, and the harness end to end on a tiny space."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from kt_fixture import write_cache

from aoe_optuna.bench import kernel_tuner_side as kts
from aoe_optuna.bench import metrics
from aoe_optuna.bench.command import main, parse_sampler
from aoe_optuna.bench.seed_run import Case
from aoe_optuna.cli.main import main as aoe_tune

INF = float("inf")
DECODE = Path(__file__).resolve().parents[2] / "studies" / "qwen25_7b_decode_910b2.json"


def test_best_so_far_and_ratio_curve():
    np.testing.assert_array_equal(metrics.best_so_far([math.nan, 5, 7, 3]), [INF, 5, 5, 3])
    # a run that stopped after 2 measurements keeps its last best to the budget
    np.testing.assert_array_equal(metrics.ratio_curve([4.0, 2.0], 2.0, 4), [2, 1, 1, 1])


def test_budget_summary_by_hand():
    s = metrics.budget_summary([1.0, 1.005, 1.03, 1.2])
    assert s["median"] == pytest.approx((1.005 + 1.03) / 2)
    assert s["mean"] == pytest.approx((1.0 + 1.005 + 1.03 + 1.2) / 4)
    assert s["p_within_1"] == 0.5 and s["p_within_5"] == 0.75


def test_measurements_to_reach():
    costs = [2.0, math.nan, 1.04, 1.0]
    assert metrics.measurements_to_reach(costs, 1.0, 0.95) == 3  # 1/1.04 = 0.96 >= 0.95
    assert metrics.measurements_to_reach(costs, 1.0, 0.99) == 4
    assert metrics.measurements_to_reach([2.0], 1.0, 0.99) is None
    assert metrics.median_reach([3, None, None]) == INF
    assert metrics.median_reach([3, 5, None]) == 5


@pytest.mark.parametrize("budget", [1, 2, 3, 5, 7])
def test_expected_best_random_equals_brute_force(budget):
    costs = np.array([3.0, 1.0, 4.0, 1.5, 9.0, 2.6, INF])  # inf: a failed config
    worst = 9.0
    draws = [min(worst if math.isinf(c) else c for c in combo)
             for combo in itertools.combinations(costs, budget)]
    exact = metrics.expected_best_random(costs, [budget])[0]
    assert exact == pytest.approx(np.mean(draws), rel=1e-12)


def test_expected_best_random_on_a_large_space_is_finite():
    costs = np.random.default_rng(0).uniform(1, 2, 200_000)
    e = metrics.expected_best_random(costs, [1, 100])
    assert e[0] == pytest.approx(costs.mean()) and 1.0 < e[1] < 1.02


def test_performance_score():
    assert metrics.performance_score(1.5, baseline=2.0, optimum=1.0) == 0.5
    assert metrics.performance_score(2.5, baseline=2.0, optimum=1.0) == -0.5
    np.testing.assert_allclose(metrics.performance_score(np.array([1.0, 2.0]), 2.0, 1.0), [1, 0])
    assert metrics.invalid_per_valid(30, 10) == 3.0


def test_parse_sampler():
    assert parse_sampler("tpe") == ("tpe", {})
    assert parse_sampler('gp-ucb:{"beta": 3.84}') == ("gp-ucb", {"beta": 3.84})
    with pytest.raises(ValueError, match="--sampler"):
        parse_sampler("gp:{beta}")


def test_harness_on_tiny_space_matches_hand_metrics(tmp_path):
    cache = write_cache(tmp_path, gz=True)
    out = tmp_path / "out"
    rc = main(["--space", str(cache), "--sampler", "random", "--sampler",
               'tpe:{"n_startup_trials": 2}', "--seeds", "3", "--budgets", "2,4",
               "--jobs", "1", "--kernel-tuner", "", "--out", str(out),
               "--cache-dir", str(tmp_path / "cache")])
    assert rc == 0
    raw = json.loads((out / "results.json").read_text())
    case = raw["cases"]["tiny"]
    assert case["n_feasible"] == 8 and case["optimum_cost_s"] == pytest.approx(4e-3)
    # the distribution: six recorded times, two failures counted as the worst (20 ms)
    dist = [4, 5, 6, 8, 10, 20, 20, 20]
    for sampler in ("random", 'tpe {"n_startup_trials": 2}'):
        runs = [r for r in raw["runs"] if r["sampler"] == sampler]
        assert sorted(r["seed"] for r in runs) == [0, 1, 2]
        summary = raw["summary"]["tiny"][sampler]
        for budget in (2, 4):
            ratios = []
            for r in runs:
                found = [c for c in r["costs"][:budget] if c is not None]
                ratios.append(min(found) / 4e-3 if found else INF)
            baseline = np.mean([min(c) for c in itertools.combinations(dist, budget)]) / 4
            got = summary["budgets"][str(budget)]
            assert got["median"] == pytest.approx(np.median(ratios))
            assert got["mean"] == pytest.approx(np.mean(ratios))
            assert got["p_within_1"] == pytest.approx(np.mean([x <= 1.01 for x in ratios]))
            assert got["p_within_5"] == pytest.approx(np.mean([x <= 1.05 for x in ratios]))
            assert got["random_baseline"] == pytest.approx(baseline)
            scores = [(baseline - x) / (baseline - 1) for x in ratios]
            assert got["score"] == pytest.approx(np.mean(scores))
        measured = sum(len(r["costs"]) for r in runs)
        assert summary["invalid_per_valid"] == pytest.approx(
            sum(r["n_infeasible"] for r in runs) / measured)
        reach = []
        for r in runs:
            hits = [i + 1 for i, c in enumerate(r["costs"])
                    if c is not None and min(x for x in r["costs"][: i + 1]
                                             if x is not None) <= 4e-3 / 0.99]
            reach.append(hits[0] if hits else INF)
        assert summary["reach_99"] == pytest.approx(np.median(reach))
        assert summary["sampler_s_per_suggestion"] > 0
    assert (out / "tiny.png").stat().st_size > 10_000
    report = (out / "report.md").read_text()
    assert "| random | 4 | 3 |" in report and "P(within 5%)" in report


def test_infeasible_cap_stops_a_run(tmp_path):
    cache = write_cache(tmp_path)
    out = tmp_path / "out"
    args = ["--space", str(cache), "--sampler", "random", "--seeds", "4", "--budgets", "8",
            "--max-infeasible", "1", "--jobs", "1", "--kernel-tuner", "", "--out", str(out),
            "--cache-dir", str(tmp_path / "cache")]
    main(args)
    raw = json.loads((out / "results.json").read_text())
    assert raw["infeasible_cap"] == 1
    for r in raw["runs"]:
        assert r["n_infeasible"] <= 1
        assert (r["stopped"] == "infeasible cap") == (len(r["costs"]) < 8)
    stopped = sum(r["stopped"] != "budget" for r in raw["runs"])
    assert raw["summary"]["tiny"]["random"]["runs_stopped_early"] == stopped
    # a second invocation on the same folder reuses the recorded runs instead of rerunning
    log = (out / "runs.jsonl").read_text()
    assert len(log.splitlines()) == 4
    main(args)
    assert (out / "runs.jsonl").read_text() == log
    again = json.loads((out / "results.json").read_text())
    assert again["summary"] == raw["summary"]


@pytest.mark.skipif(not kts.available(), reason="kernel_tuner not installed (bench extra)")
def test_kernel_tuner_side_replays_the_same_file(tmp_path):
    case = Case.from_path(write_cache(tmp_path, gz=True))
    r = kts.run_kernel_tuner(case, "random_sample", seed=0, budget=3)
    assert len(r.costs) == 3 and r.n_infeasible == 0
    # Kernel Tuner's cache restriction drops failed configs: only recorded times come back
    assert set(np.round(np.array(r.costs) * 1e3, 6)) <= {4.0, 5.0, 6.0, 8.0, 10.0, 20.0}


def test_incumbent_is_chosen_by_measurement_and_scored_by_truth():
    measured = [3.0, 2.0, math.nan, 1.5, 1.6]
    truth = [3.1, 2.5, INF, 1.9, 1.2]  # the last config is truly best but measured worse
    np.testing.assert_array_equal(metrics.incumbent_costs(measured, truth),
                                  [3.1, 2.5, 2.5, 1.9, 1.9])
    np.testing.assert_array_equal(metrics.incumbent_costs(measured), [3, 2, 2, 1.5, 1.5])
    assert metrics.measurements_to_reach(measured, 1.9, 0.99, truth) == 4


def test_each_run_seed_draws_its_own_measurement_noise():
    from aoe_optuna.bench.seed_run import _evaluator_for_seed, build_case

    built = build_case(Case.from_path("studies/qwen25_7b_decode_910b2.json"))
    config = built.spec.space.full_config(built.spec.baseline)
    a, b = (_evaluator_for_seed(built.evaluator, s).evaluate(config) for s in (1, 2))
    again = _evaluator_for_seed(built.evaluator, 1).evaluate(config)
    assert a.tokens_per_s != b.tokens_per_s  # independent repetitions
    assert again.tokens_per_s == a.tokens_per_s  # but each reproducible
    assert abs(a.tokens_per_s / b.tokens_per_s - 1) < 0.1  # noise, not another landscape
    assert built.evaluator.backend.seed == 0  # the shared case is left as the spec made it


def test_paired_comparison_by_hand():
    a = [1.00, 1.02, 1.01, 1.03, 1.00]
    b = [1.01, 1.02, 1.00, 1.05, 1.02]
    c = metrics.paired_comparison(a, b, np.random.default_rng(0), n_boot=2000)
    assert (c["wins"], c["ties"], c["losses"]) == (3, 1, 1)
    # sign test on 4 untied pairs, 1 loss: 2 * (C(4,0) + C(4,1)) / 2^4
    assert c["sign_p"] == pytest.approx(2 * 5 / 16)
    assert c["median_diff"] == pytest.approx(np.median(a) - np.median(b))
    assert c["mean_diff"] == pytest.approx(np.mean(a) - np.mean(b))
    assert c["mean_diff_lo"] <= c["mean_diff"] <= c["mean_diff_hi"]
    same = metrics.paired_comparison(a, a, np.random.default_rng(0))
    assert same["ties"] == 5 and same["sign_p"] == 1.0 and same["mean_diff_hi"] == 0.0
    with pytest.raises(ValueError, match="equal"):
        metrics.paired_comparison(a, b[:3], np.random.default_rng(0))


def test_effective_noise_is_the_spread_of_the_log_ratios():
    true = np.array([1.0, 2.0, 4.0, np.inf])
    measured = true * np.exp(np.array([0.01, -0.01, 0.01, 0.0]))
    # log ratios 0.01, -0.01, 0.01 (the failed config is left out): std 0.01 sqrt(8/9)
    assert metrics.effective_noise(measured, true) == pytest.approx(0.01 * np.sqrt(8 / 9))
    with pytest.raises(ValueError, match="two"):
        metrics.effective_noise([1.0], [1.0])


def test_expected_incumbent_is_the_mean_of_the_draws():
    true = [1.0, 1.004, 1.01, 2.0]
    draws = metrics.incumbent_draws(true, 0.01, np.random.default_rng(3), 500)
    assert metrics.expected_incumbent(true, 0.01, np.random.default_rng(3), 500) == draws.mean()
    assert 1.0 < draws.mean() < 1.01


def test_incumbent_draws_winners_curse_by_hand():
    rng = np.random.default_rng(0)
    assert (metrics.incumbent_draws([1.0], 0.01, rng, 50) == 1.0).all()
    assert (metrics.incumbent_draws([1.02, 1.0, np.nan], 0.0, rng, 5) == 1.0).all()
    far = metrics.incumbent_draws([1.0, 1.5, 2.0], 0.01, rng, 500)
    assert (far == 1.0).all()  # 40 sigma away: never mistaken for the best
    # two configs 1 sigma apart: the worse wins when its noise beats the other's by
    # more than the gap, P = Phi(-1 / sqrt(2)) = 0.24
    near = metrics.incumbent_draws([1.0, np.exp(0.01)], 0.01, np.random.default_rng(1), 20000)
    assert np.mean(near > 1.0) == pytest.approx(0.2398, abs=0.01)
    # more near-optimal configs measured: a worse expected incumbent
    few = metrics.incumbent_draws(1 + 0.002 * np.arange(5), 0.01, rng, 4000).mean()
    many = metrics.incumbent_draws(1 + 0.002 * np.arange(20), 0.01, rng, 4000).mean()
    assert many > few > 1.0
    with pytest.raises(ValueError, match="no successfully"):
        metrics.incumbent_draws([np.inf], 0.01, rng)


@pytest.mark.parametrize("name", ["compare", "noise-floor", "missed-optimum", "diagnose"])
def test_bench_analyses_have_help_with_an_example(name, capsys):
    with pytest.raises(SystemExit) as done:
        aoe_tune(["bench", name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: aoe-tune bench {name} ")
    assert f"example:\n  aoe-tune bench {name} --space studies/" in out


def test_bench_help_lists_its_analyses_and_the_old_form_still_benchmarks(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        aoe_tune(["bench", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: aoe-tune bench [-h] --space SPACE")
    assert all(f"  {n} " in out for n in ("compare", "noise-floor", "missed-optimum", "diagnose"))
    out_dir = tmp_path / "out"
    assert aoe_tune(["bench", "--space", str(DECODE), "--sampler", "random", "--seeds", "1",
                     "--budgets", "3", "--jobs", "1", "--kernel-tuner", "",
                     "--out", str(out_dir)]) == 0
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "qwen25_7b_decode_910b2.png", "report.md", "results.json", "runs.jsonl"]


def test_a_missing_plot_library_stops_the_bench_before_the_first_run(
    tmp_path, monkeypatch, capsys
):
    import sys

    cache = write_cache(tmp_path, gz=True)
    out = tmp_path / "out"
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    rc = main(["--space", str(cache), "--sampler", "random", "--seeds", "1", "--budgets", "2",
               "--jobs", "1", "--kernel-tuner", "", "--out", str(out)])
    assert rc == 2
    err = capsys.readouterr().err
    assert "matplotlib" in err and len(err.strip().splitlines()) == 1
    assert not (out / "runs.jsonl").exists()


def test_a_run_is_assembled_by_the_session_as_aoe_tune_assembles_a_study(tmp_path):
    """A spec case's study holds the spec and the sampler as a user's study would, with no
    baseline waiting (a run starts from its sampler's first proposal); a recorded space's
    study is a session on its bare space. Each run's measurement noise is its seed's."""
    from aoe_optuna.bench.seed_run import Task, build_case, open_session
    from aoe_optuna.spec.stored import SAMPLER_ATTR, stored_spec
    from aoe_optuna.study.session import SpaceSession, StudySession

    case = Case.from_path(DECODE)
    built = build_case(case)
    session = open_session(built, Task(case, "random", (), 3, 4, 10))
    assert isinstance(session, StudySession) and session.backend.seed == 3
    assert stored_spec(session.study).canonical() == built.spec.canonical()
    assert session.study.user_attrs[SAMPLER_ATTR] == {"name": "random", "kwargs": {}, "seed": 3}
    assert session.study.get_trials() == []  # no baseline enqueued
    replay = Case.from_path(write_cache(tmp_path, gz=True))
    session = open_session(build_case(replay), Task(replay, "tpe", (("n_startup_trials", 2),),
                                                    1, 4, 10))
    assert isinstance(session, SpaceSession) and session.space is build_case(replay).space
    assert session.sampler_choice.kwargs == {"n_startup_trials": 2}
