"""aoe-tune bench compare: two samplers of real bench runs, seed for seed, and its bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kt_fixture import write_cache

from aoe_optuna.bench import compare
from aoe_optuna.bench.seed_run import RunResult
from aoe_optuna.cli.main import main


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> tuple[Path, Path]:
    """(recorded space, bench --out folder): random and tpe, seeds 0-2, budget 3."""
    root = tmp_path_factory.mktemp("compare")
    cache = write_cache(root, gz=True)
    out = root / "out"
    assert main(["bench", "--space", str(cache), "--sampler", "random", "--sampler", "tpe",
                 "--seeds", "3", "--budgets", "3", "--jobs", "1", "--kernel-tuner", "",
                 "--out", str(out), "--cache-dir", str(root / "cache")]) == 0
    return cache, out


def test_ratios_and_failed_by_hand() -> None:
    runs = {0: RunResult(case="c", sampler="s", seed=0, budget=3,
                         costs=[float("nan"), 3.0, 2.0]),
            1: RunResult(case="c", sampler="s", seed=1, budget=3, costs=[4.0, 5.0, 6.0])}
    assert compare.ratios(runs, 2.0, 2) == {0: 1.5, 1: 2.0}
    assert compare.ratios(runs, 2.0, 3) == {0: 1.0, 1: 2.0}
    assert compare.failed(runs, 3) == {0: 1, 1: 0}


def test_pairs_the_bench_runs(bench, capsys) -> None:
    cache, out = bench
    raw = json.loads((out / "results.json").read_text())
    want = {s: raw["summary"]["tiny"][s]["budgets"]["3"]["median"] for s in ("random", "tpe")}
    capsys.readouterr()
    assert main(["bench", "compare", "--space", str(cache), "--runs", str(out),
                 "--a", "random", "--b", "tpe", "--budget", "3"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("3 seeds (0-2), best/opt at 3")
    assert f"a: median {want['random']:.4f}" in text and f"b: median {want['tpe']:.4f}" in text
    assert main(["bench", "compare", "--space", str(cache), "--runs", str(out),
                 "--a", "random", "--b", "tpe", "--budget", "3", "--seeds", "1-2"]) == 0
    assert capsys.readouterr().out.startswith("2 seeds (1-2)")
    # one label from two folders (two versions of the code): a run against itself ties
    assert main(["bench", "compare", "--space", str(cache), "--a-runs", str(out),
                 "--b-runs", str(out), "--a", "tpe", "--b", "tpe", "--budget", "3"]) == 0
    assert "0 wins, 3 ties, 0 losses" in capsys.readouterr().out


def test_bad_inputs_exit_2_in_one_line_and_write_nothing(bench, tmp_path, capsys) -> None:
    cache, out = bench
    runs = ["--space", str(cache), "--runs", str(out)]
    before = sorted(p.name for p in out.iterdir())
    for argv, want in [
        (["--space", str(cache), "--a", "random", "--b", "tpe"], "argument --runs: expected"),
        (["--space", str(cache), "--runs", str(tmp_path), "--a", "random", "--b", "tpe"],
         "argument --runs: expected a bench --out folder"),
        (["--space", str(tmp_path / "none.json"), "--runs", str(out), "--a", "random",
          "--b", "tpe"], "argument --space: expected a study spec or recorded space file"),
        ([*runs, "--b", "tpe"], "required: --a"),
        ([*runs, "--a", "random", "--b", "tpe", "--budget", "0"],
         "argument --budget: expected an integer >= 1"),
        ([*runs, "--a", "random", "--b", "tpe", "--seeds", "5-2"],
         "argument --seeds: expected LO-HI"),
        ([*runs, "--a", "random", "--b", "nope", "--budget", "3"], "no seed has both"),
        ([*runs, "--a", "random", "--b", "tpe", "--budget", "4"], "of at least 4 measurements"),
        # a recorded space has no noise-free costs to take an expectation over
        ([*runs, "--a", "tpe", "--b", "tpe", "--budget", "3", "--expected"], "noise-free"),
    ]:
        capsys.readouterr()
        assert main(["bench", "compare", *argv]) == 2, argv
        captured = capsys.readouterr()
        err = captured.err.strip()
        assert err.startswith("aoe-tune bench compare: error: ") and want in err, (argv, err)
        assert "\n" not in err and "Traceback" not in err and not captured.out, argv
    assert sorted(p.name for p in out.iterdir()) == before


def test_a_folder_with_runs_of_other_spaces_compares_only_this_one(bench, tmp_path,
                                                                   capsys) -> None:
    """One bench command with several --space writes every space's runs into one folder."""
    cache, out = bench
    capsys.readouterr()
    assert main(["bench", "compare", "--space", str(cache), "--runs", str(out),
                 "--a", "random", "--b", "tpe", "--budget", "3"]) == 0
    alone = capsys.readouterr().out
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    lines = (out / "runs.jsonl").read_text().splitlines()
    other = []
    for line in lines:  # the same labels and seeds on another space, written after them
        run = json.loads(line)
        run["case"] = "another_space"
        run["costs"] = [c * 7.0 if c is not None else None for c in run["costs"]]
        other.append(json.dumps(run))
    (mixed / "runs.jsonl").write_text("\n".join(lines + other) + "\n")
    assert main(["bench", "compare", "--space", str(cache), "--runs", str(mixed),
                 "--a", "random", "--b", "tpe", "--budget", "3"]) == 0
    assert capsys.readouterr().out == alone
