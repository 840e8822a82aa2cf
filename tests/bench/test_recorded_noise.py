"""The bench with recorded noise: runs meet the GPU's repeats, scored by the recorded
means; and ``bench race``: the certified winner against the argmin, rerun on one search."""

from __future__ import annotations

import json

import numpy as np
import pytest
from race_fixture import noisy_cache

from aoe_optuna.bench.race_reruns import agreement
from aoe_optuna.bench.seed_run import Case, Task, run_task
from aoe_optuna.cli.main import main as aoe_tune


def test_a_run_with_recorded_noise_is_scored_by_the_recorded_means(tmp_path):
    path = noisy_cache(tmp_path)
    runs = {}
    for noise in ("none", "recorded"):
        case = Case.from_path(path, noise=noise)
        runs[noise] = run_task(Task(case, "random", (), 0, 8, 400, "random"))
    plain, noisy = runs["none"], runs["recorded"]
    assert plain.true_costs is None and len(noisy.true_costs) == len(noisy.costs) == 8
    assert not np.allclose(noisy.costs, noisy.true_costs)  # measured with noise
    assert np.allclose(noisy.costs, noisy.true_costs, rtol=0.05)  # around the means
    assert noisy.costs != run_task(Task(Case.from_path(path, noise="recorded"), "random", (), 1, 8,
                                        400, "random")).costs


def test_agreement_counts_a_winner_in_the_others_tie_set():
    assert agreement([(1, ()), (1, ())]) == 1.0
    assert agreement([(1, (2,)), (2, ())]) == 0.5  # 2 is in 1's ties, 1 not in 2's
    assert agreement([(1, ()), (2, ()), (1, ())]) == pytest.approx(2 / 6)


def test_bench_race_reports_the_race_beside_the_argmin(tmp_path, capsys):
    path = noisy_cache(tmp_path)
    out = tmp_path / "race"
    assert aoe_tune(["bench", "race", "--space", str(path), "--seeds", "2", "--reruns", "3",
                     "--budget", "10", "--race-budget", "1.0", "--sampler", "random",
                     "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "race.jsonl").read_text().splitlines()]
    assert [r["seed"] for r in rows] == [0, 1]
    for r in rows:
        assert len(r["races"]) == 3 and len(r["argmin_reruns"]) == 3
        assert all(x["spent"] <= r["searched"] for x in r["races"])
        assert all(x["true"] >= r["best_true_s"] for x in r["races"])
    summary = json.loads((out / "summary.json").read_text())["noisy_space"]
    assert summary["seeds"] == 2 and 0 <= summary["race_agree_mean"] <= 1
    assert "| noisy_space | 2 |" in (out / "report.md").read_text()
    # resumed: the seeds already in race.jsonl are not run again
    assert aoe_tune(["bench", "race", "--space", str(path), "--seeds", "2", "--reruns", "3",
                     "--budget", "10", "--out", str(out)]) == 0
    assert len((out / "race.jsonl").read_text().splitlines()) == 2


def test_bench_race_refuses_a_spec_in_one_line(capsys):
    assert aoe_tune(["bench", "race", "--space", "studies/cpu_gemm.json", "--out",
                     "/nonexistent/x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("aoe-tune bench race: error: --space: expected recorded spaces (Kernel "
                   "Tuner cache files)")


def test_bench_race_reruns_its_races_on_the_stored_searches(tmp_path, monkeypatch):
    path = noisy_cache(tmp_path)
    out = tmp_path / "race"
    argv = ["bench", "race", "--space", str(path), "--seeds", "1", "--reruns", "3",
            "--budget", "10", "--race-budget", "1.0", "--sampler", "random", "--out", str(out)]
    assert aoe_tune(argv) == 0
    (row,) = [json.loads(line) for line in (out / "race.jsonl").read_text().splitlines()]
    assert len(row["search"]["trials"]) == row["searched"] == 10
    import aoe_optuna.bench.race_reruns as rr

    def no_search(*args, **kwargs):
        raise AssertionError("--rerace ran a search")

    monkeypatch.setattr(rr, "search", no_search)
    assert aoe_tune([*argv, "--reruns", "4", "--rerace"]) == 0
    (again,) = [json.loads(line) for line in (out / "race.jsonl").read_text().splitlines()]
    assert again["search"] == row["search"] and len(again["races"]) == 4
    assert again["races"][:3] == row["races"]  # the same draws: the same races
