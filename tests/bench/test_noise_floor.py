"""aoe-tune bench noise-floor: the incumbent metric's floor under noise, runs re-scored on it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kt_fixture import write_cache

from aoe_optuna.bench import noise_floor
from aoe_optuna.bench.seed_run import RunResult
from aoe_optuna.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DECODE = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "out"
    assert main(["bench", "--space", str(DECODE), "--sampler", "random", "--sampler", "tpe",
                 "--seeds", "2", "--budgets", "20", "--jobs", "1", "--kernel-tuner", "",
                 "--out", str(out)]) == 0
    return out


def test_floor_rises_with_the_near_optimal_configs_measured() -> None:
    rng = np.random.default_rng(0)
    flat = 1.0 + 0.0001 * np.arange(300)  # a flat top: 100 configs within 1% of the best
    rows = noise_floor.floor_rows(np.concatenate([flat, [np.inf]]), 100, 0.01, rng, 4000)
    assert [r[0] for r in rows] == [1, 5, 10, 20, 50, 100]
    assert rows[0][1:] == (1.0, 1.0, 1.0)  # the optimum alone: no curse
    means = [r[2] for r in rows]
    assert all(b > a for a, b in zip(means, means[1:], strict=False))
    steep = noise_floor.floor_rows(1.0 + 0.001 * np.arange(300), 100, 0.01, rng, 4000)
    assert steep[-1][2] == pytest.approx(steep[-2][2], abs=3e-4)  # configs 5 sigma off never win


def test_expected_incumbent_ignores_configs_far_from_the_best() -> None:
    run = RunResult(case="c", sampler="s", seed=0, budget=3, costs=[2.0, 1.0, 3.0],
                    true_costs=[2.0, 1.0, np.inf])
    rng = np.random.default_rng
    assert noise_floor.expected_incumbent(run, 3, 1.0, 0.01, rng(0), 100) == 1.0
    assert noise_floor.expected_incumbent(run, 1, 1.0, 0.01, rng(0), 100) == 2.0


def test_report_on_bench_runs(runs, capsys) -> None:
    capsys.readouterr()
    assert main(["bench", "noise-floor", "--space", str(DECODE), "--runs", str(runs),
                 "--budget", "20", "--a", "random", "--b", "tpe", "--draws", "200"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("qwen25_7b_decode_910b2: 23,252 feasible configs")
    within = int(text.split(" within 1.0%")[0].rsplit(", ", 1)[1])  # the near-optimal set
    assert 10 < within < 500
    assert "| 1 | 1.0000 | 1.0000 | 1.0000 |" in text
    assert "| random | 2 |" in text and "| tpe | 2 |" in text
    assert "expected incumbent, random vs tpe, 2 seeds" in text
    sigma = float(text.split("noise on the workload's cost ")[1].split("%")[0])
    assert 0.2 < sigma < 1.0  # 1% per GEMM, averaged over the decode step's GEMMs


def test_bad_inputs_exit_2_in_one_line_and_write_nothing(runs, tmp_path, capsys) -> None:
    before = sorted(p.name for p in runs.iterdir())
    spec_runs = ["--space", str(DECODE), "--runs", str(runs)]
    for argv, want in [
        (["--space", str(DECODE), "--runs", str(tmp_path)],
         "argument --runs: expected a bench --out folder"),
        (["--space", str(tmp_path / "none.json"), "--runs", str(runs)],
         "argument --space: expected a simulator study spec"),
        (["--space", str(write_cache(tmp_path, gz=True)), "--runs", str(runs)],
         "(a recorded space)"),
        (["--space", str(DECODE)], "required: --runs"),
        ([*spec_runs, "--draws", "0"], "argument --draws: expected an integer >= 1"),
        ([*spec_runs, "--budget", "x"], "argument --budget: expected an integer >= 1"),
        ([*spec_runs, "--a", "random"], "--a/--b: expected both labels or neither"),
        ([*spec_runs, "--budget", "500"], "expected runs of at least 500 measurements"),
        ([*spec_runs, "--budget", "20", "--a", "random", "--b", "nope"], "no seed has both"),
    ]:
        capsys.readouterr()
        assert main(["bench", "noise-floor", *argv]) == 2, argv
        captured = capsys.readouterr()
        err = captured.err.strip()
        assert err.startswith("aoe-tune bench noise-floor: error: ") and want in err, (argv, err)
        assert "\n" not in err and "Traceback" not in err and not captured.out, argv
    assert sorted(p.name for p in runs.iterdir()) == before


def test_compare_expected_incumbent_matches_the_noise_floor(runs, capsys) -> None:
    capsys.readouterr()
    assert main(["bench", "compare", "--space", str(DECODE), "--runs", str(runs),
                 "--a", "random", "--b", "tpe", "--budget", "20", "--expected"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("2 seeds (0-1), expected incumbent / opt (noise ")
    median_a = float(text.splitlines()[1].split("median ")[1].split()[0])
    assert main(["bench", "noise-floor", "--space", str(DECODE), "--runs", str(runs),
                 "--budget", "20"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith("| random | 2 |"))
    expected_median = float(row.split("|")[4].split("/")[0])
    assert median_a == pytest.approx(expected_median, abs=5e-4)  # other draws, same expectation
