"""aoe-tune bench missed-optimum: how near a run that missed the optimum came to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from kt_fixture import write_cache

from aoe_optuna.bench import missed_optimum
from aoe_optuna.bench.seed_run import RunResult
from aoe_optuna.cli.main import main
from aoe_optuna.samplers.neighbourhood import steps_away

ROOT = Path(__file__).resolve().parents[2]
DECODE = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


@pytest.fixture(scope="module")
def decode():
    return missed_optimum.feasible_by_cost(DECODE)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Bench runs of random search on the decode study: seeds 0-1, budget 20."""
    out = tmp_path_factory.mktemp("bench") / "out"
    assert main(["bench", "--space", str(DECODE), "--sampler", "random", "--seeds", "2",
                 "--budgets", "20", "--jobs", "1", "--kernel-tuner", "", "--out", str(out)]) == 0
    return out


def test_a_near_miss_is_found_and_ranked_by_its_measured_value(decode) -> None:
    space, rows, costs = decode
    table = missed_optimum.cost_table(costs)
    opt = rows[0]

    def first_of_its_cost(i: int) -> bool:  # configs of equal cost share one rank
        return table[round(float(costs[i]), missed_optimum.DIGITS)] == i

    # a config one index step from the optimum in one parameter, and a far one
    near = next(i for i in range(1, len(rows)) if (rows[i] != opt).sum() == 1
                and int(steps_away(space, opt, rows[i:i + 1])[0]) == 1
                and first_of_its_cost(i))
    far = next(i for i in range(len(rows) // 2, 0, -1) if (rows[i] != opt).sum() >= 3
               and first_of_its_cost(i) and first_of_its_cost(i - 1))
    run = RunResult(case="c", sampler="s", seed=0, budget=3,
                    costs=[float(costs[0]) * 0.5, float(costs[near]), float(costs[far])],
                    true_costs=[float(costs[far]), float(costs[near]), float(costs[far - 1])])
    miss = missed_optimum.analyse(run, 3, table, rows, space)
    assert miss == {"changed": 1, "steps": 1, "rank": 2}  # the lucky far config measured first
    hit = RunResult(case="c", sampler="s", seed=0, budget=2, costs=[1.0, 2.0],
                    true_costs=[float(costs[near]), float(costs[0])])
    assert missed_optimum.analyse(hit, 2, table, rows, space) is None
    assert missed_optimum.analyse(hit, 1, table, rows, space) is not None  # budget cuts it off


def test_report_on_bench_runs(runs, capsys) -> None:
    capsys.readouterr()
    assert main(["bench", "missed-optimum", "--space", str(DECODE), "--runs", str(runs),
                 "--budget", "20"]) == 0
    text = capsys.readouterr().out
    space, rows, _ = missed_optimum.feasible_by_cost(DECODE)
    assert f"optimum {space.config(rows[0])}" in text
    assert "| random | 2 | 2 |" in text  # 20 random configs of 23,252 miss it


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
        ([*spec_runs, "--budget", "0"], "argument --budget: expected an integer >= 1"),
        ([*spec_runs, "--budget", "500"], "expected runs of at least 500 measurements"),
        ([*spec_runs, "--ranks", "10-5"], "argument --ranks: expected LO-HI"),
    ]:
        capsys.readouterr()
        assert main(["bench", "missed-optimum", *argv]) == 2, argv
        captured = capsys.readouterr()
        err = captured.err.strip()
        assert err.startswith("aoe-tune bench missed-optimum: error: ") and want in err, err
        assert "\n" not in err and "Traceback" not in err and not captured.out, argv
    bad = tmp_path / "bad.json"
    bad.write_text('{"search_space": {"tile_m": []}}')
    assert main(["bench", "missed-optimum", "--space", str(bad), "--runs", str(runs),
                 "--budget", "20"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aoe-tune bench missed-optimum: error: argument --space: ")
    assert "\n" not in err and "search_space.tile_m" in err
    assert sorted(p.name for p in runs.iterdir()) == before


def test_ranks_lists_the_configs_and_counts_them_per_run(decode, runs, capsys) -> None:
    space, rows, costs = decode
    table = missed_optimum.cost_table(costs)
    ranks = sorted(set(table.values()))  # the first position of each distinct cost
    fifth = next(i for i in ranks if i >= 4)
    tenth = next(i for i in ranks if i >= 9)
    eleventh = next(i for i in ranks if i > tenth)
    lo, hi = fifth + 1, tenth + 1
    run = RunResult(case="c", sampler="s", seed=0, budget=3, costs=[1.0, 2.0, 3.0],
                    true_costs=[float(costs[fifth]), float(costs[tenth]),
                                float(costs[eleventh])])
    assert missed_optimum.measured_of_ranks(run, 3, table, lo, hi) == 2  # not the one past hi
    assert missed_optimum.measured_of_ranks(run, 1, table, 5, 10) == 1
    capsys.readouterr()
    assert main(["bench", "missed-optimum", "--space", str(DECODE), "--runs", str(runs),
                 "--budget", "5", "--ranks", "5-10"]) == 0
    text = capsys.readouterr().out
    assert "configs ranked 5-10" in text and f"  10: {space.config(rows[9])}" in text
    assert "random: 0.00 of them measured per run (2 runs)" in text
