"""scripts/noise_floor.py: the incumbent metric's floor under noise, and runs re-scored on it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kt_fixture import write_cache
from script_module import load_script

from aoe_optuna.bench.command import main as bench_main
from aoe_optuna.bench.runner import RunResult

ROOT = Path(__file__).resolve().parents[1]
DECODE = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


@pytest.fixture(scope="module")
def script():
    return load_script("noise_floor")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "out"
    assert bench_main(["--space", str(DECODE), "--sampler", "random", "--sampler", "tpe",
                       "--seeds", "2", "--budgets", "20", "--jobs", "1", "--kernel-tuner", "",
                       "--out", str(out)]) == 0
    return out


def test_floor_rises_with_the_near_optimal_configs_measured(script) -> None:
    rng = np.random.default_rng(0)
    flat = 1.0 + 0.0001 * np.arange(300)  # a flat top: 100 configs within 1% of the best
    rows = script.floor_rows(np.concatenate([flat, [np.inf]]), 100, 0.01, rng, 4000)
    assert [r[0] for r in rows] == [1, 5, 10, 20, 50, 100]
    assert rows[0][1:] == (1.0, 1.0, 1.0)  # the optimum alone: no curse
    means = [r[2] for r in rows]
    assert all(b > a for a, b in zip(means, means[1:], strict=False))
    steep = script.floor_rows(1.0 + 0.001 * np.arange(300), 100, 0.01, rng, 4000)
    assert steep[-1][2] == pytest.approx(steep[-2][2], abs=3e-4)  # configs 5 sigma off never win


def test_expected_incumbent_ignores_configs_far_from_the_best(script) -> None:
    run = RunResult(case="c", sampler="s", seed=0, budget=3, costs=[2.0, 1.0, 3.0],
                    true_costs=[2.0, 1.0, np.inf])
    assert script.expected_incumbent(run, 3, 1.0, 0.01, np.random.default_rng(0), 100) == 1.0
    assert script.expected_incumbent(run, 1, 1.0, 0.01, np.random.default_rng(0), 100) == 2.0


def test_report_on_bench_runs(script, runs, capsys) -> None:
    capsys.readouterr()
    assert script.main(["--space", str(DECODE), "--runs", str(runs), "--budget", "20",
                        "--a", "random", "--b", "tpe", "--draws", "200"]) == 0
    text = capsys.readouterr().out
    assert "125 within 1.0%" in text  # the decode study's near-optimal set
    assert "| 1 | 1.0000 | 1.0000 | 1.0000 |" in text
    assert "| random | 2 |" in text and "| tpe | 2 |" in text
    assert "expected incumbent, random vs tpe, 2 seeds" in text
    sigma = float(text.split("noise on the workload's cost ")[1].split("%")[0])
    assert 0.2 < sigma < 1.0  # 1% per GEMM, averaged over the decode step's GEMMs


def test_bad_inputs_exit_2_in_one_line(script, runs, tmp_path, capsys) -> None:
    cases = [
        (["--space", str(DECODE), "--runs", str(tmp_path)], "no runs.jsonl"),
        (["--space", str(tmp_path / "none.json"), "--runs", str(runs)], "no such study spec"),
        (["--space", str(write_cache(tmp_path, gz=True)), "--runs", str(runs)],
         "expected a simulator study spec"),
        (["--space", str(DECODE), "--runs", str(runs), "--a", "random"], "both labels"),
        (["--space", str(DECODE), "--runs", str(runs), "--budget", "500"], "no run of at least"),
        (["--space", str(DECODE), "--runs", str(runs), "--budget", "20", "--a", "random",
          "--b", "nope"], "no seed has runs of both"),
    ]
    for argv, want in cases:
        capsys.readouterr()
        assert script.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert want in err and "\n" not in err, (argv, err)


def test_compare_runs_expected_incumbent_matches_the_noise_floor_script(
    script, runs, capsys
) -> None:
    compare = load_script("compare_runs")
    capsys.readouterr()
    assert compare.main(["--space", str(DECODE), "--runs", str(runs), "--a", "random",
                         "--b", "tpe", "--budget", "20", "--expected"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("2 seeds (0-1), expected incumbent / opt (noise ")
    median_a = float(text.splitlines()[1].split("median ")[1].split()[0])
    assert script.main(["--space", str(DECODE), "--runs", str(runs), "--budget", "20"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith("| random | 2 |"))
    expected_median = float(row.split("|")[4].split("/")[0])
    assert median_a == pytest.approx(expected_median, abs=5e-4)  # other draws, same expectation
