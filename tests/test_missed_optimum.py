"""scripts/missed_optimum.py: how near a run that missed the optimum came to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from script_module import load_script

from aoe_optuna.bench.command import main as bench_main
from aoe_optuna.bench.runner import RunResult

ROOT = Path(__file__).resolve().parents[1]
DECODE = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


@pytest.fixture(scope="module")
def script():
    return load_script("missed_optimum")


@pytest.fixture(scope="module")
def decode(script):
    return script.feasible_by_cost(DECODE)


def test_a_near_miss_is_found_and_ranked_by_its_measured_value(script, decode) -> None:
    space, rows, costs = decode
    table = script.cost_table(costs)
    opt = rows[0]
    # a config one index step from the optimum in one parameter, and a far one
    near = next(i for i in range(1, len(rows)) if (rows[i] != opt).sum() == 1
                and int(script.steps_away(space, opt, rows[i:i + 1])[0]) == 1)
    far = next(i for i in range(len(rows) // 2, 0, -1) if (rows[i] != opt).sum() >= 3)
    run = RunResult(case="c", sampler="s", seed=0, budget=3,
                    costs=[float(costs[far]) * 0.5, float(costs[near]), float(costs[far])],
                    true_costs=[float(costs[far]), float(costs[near]), float(costs[far - 1])])
    miss = script.analyse(run, 3, table, rows, space)
    assert miss == {"changed": 1, "steps": 1, "rank": 2}  # the lucky far config measured first
    hit = RunResult(case="c", sampler="s", seed=0, budget=2, costs=[1.0, 2.0],
                    true_costs=[float(costs[near]), float(costs[0])])
    assert script.analyse(hit, 2, table, rows, space) is None
    assert script.analyse(hit, 1, table, rows, space) is not None  # budget cuts the hit off


def test_report_on_bench_runs_and_bad_inputs(script, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert bench_main(["--space", str(DECODE), "--sampler", "random", "--seeds", "2",
                       "--budgets", "20", "--jobs", "1", "--kernel-tuner", "",
                       "--out", str(out)]) == 0
    capsys.readouterr()
    assert script.main(["--space", str(DECODE), "--runs", str(out), "--budget", "20"]) == 0
    text = capsys.readouterr().out
    assert "optimum {'tile_m': 16, 'tile_k': 64, 'tile_n': 208" in text
    assert "| random | 2 | 2 |" in text  # 20 random configs of 23,252 miss it
    for argv, want in [
        (["--space", str(DECODE), "--runs", str(tmp_path)], "no runs.jsonl"),
        (["--space", str(tmp_path / "none.json"), "--runs", str(out)], "no such study spec"),
        (["--space", str(DECODE), "--runs", str(out), "--budget", "0"], "expected >= 1"),
        (["--space", str(DECODE), "--runs", str(out), "--budget", "500"], "no run of at least"),
        (["--space", str(DECODE), "--runs", str(out), "--ranks", "10-5"], "expected LO-HI"),
    ]:
        capsys.readouterr()
        assert script.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert want in err and "\n" not in err, (argv, err)


def test_ranks_lists_the_configs_and_counts_them_per_run(script, decode, tmp_path, capsys) -> None:
    space, rows, costs = decode
    table = script.cost_table(costs)
    run = RunResult(case="c", sampler="s", seed=0, budget=3, costs=[1.0, 2.0, 3.0],
                    true_costs=[float(costs[4]), float(costs[9]), float(costs[10])])
    assert script.measured_of_ranks(run, 3, table, 5, 10) == 2  # ranks 5 and 10, not 11
    assert script.measured_of_ranks(run, 1, table, 5, 10) == 1
    out = tmp_path / "out"
    assert bench_main(["--space", str(DECODE), "--sampler", "random", "--seeds", "1",
                       "--budgets", "5", "--jobs", "1", "--kernel-tuner", "",
                       "--out", str(out)]) == 0
    capsys.readouterr()
    assert script.main(["--space", str(DECODE), "--runs", str(out), "--budget", "5",
                        "--ranks", "5-10"]) == 0
    text = capsys.readouterr().out
    assert "configs ranked 5-10" in text and "  10: {'tile_m': 16" in text
    assert "random: 0.00 of them measured per run (1 runs)" in text
