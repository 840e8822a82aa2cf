"""aoe-tune bench diagnose: true quality of a run's proposals, and its bad-input errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from kt_fixture import write_cache

from aoe_optuna.bench.command import exhaustive_for
from aoe_optuna.bench.diagnose import proposal_quality
from aoe_optuna.bench.seed_run import Case
from aoe_optuna.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DECODE = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


def test_incumbent_is_never_better_than_the_best_config_measured() -> None:
    case = Case.from_path(DECODE)
    q = proposal_quality(case, "random", {}, seeds=2, budget=20,
                         optimum=exhaustive_for(case, None).optimum)
    assert q["incumbent"].shape == (2,) and q["deciles"].shape == (2, 10)
    # the incumbent is one of the measured configs, picked by a noisy measurement
    assert np.all(q["incumbent"] >= q["best"]) and np.all(q["best"] >= 1.0)
    assert np.all(q["within_1pct"] <= 20)
    # random proposals of this space: their median is far from the optimum
    assert np.median(q["deciles"]) > 1.1


def test_report_through_the_cli(capsys) -> None:
    assert main(["bench", "diagnose", "--space", str(DECODE), "--sampler", "random",
                 "--seeds", "2", "--budget", "20", "--first-seed", "3"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("qwen25_7b_decode_910b2: 23,252 feasible;")
    assert "\nrandom (2 seeds, 20 measurements)\n" in captured.out
    assert "per tenth of the run (1-2 3-4 5-6" in captured.out
    assert "random seed 3 (1/2)" in captured.err and "random seed 4 (2/2)" in captured.err


def test_bad_inputs_exit_2_in_one_line_and_write_nothing(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    space = ["--space", str(DECODE)]
    for argv, want in [
        (["--space", str(tmp_path / "none.json"), "--sampler", "random"],
         "argument --space: expected a simulator study spec"),
        (["--space", str(write_cache(tmp_path, gz=True)), "--sampler", "random"],
         "(a recorded space)"),
        (space, "required: --sampler"),
        ([*space, "--sampler", "tpe:{bad"], "expected NAME:JSON-object"),
        ([*space, "--sampler", "nope"], "unknown sampler 'nope'"),
        ([*space, "--sampler", 'random:{"bogus": 1}'], "argument --sampler"),
        ([*space, "--sampler", "random", "--budget", "5"],
         "argument --budget: expected an integer >= 10"),
        ([*space, "--sampler", "random", "--seeds", "0"],
         "argument --seeds: expected an integer >= 1"),
        ([*space, "--sampler", "random", "--first-seed", "-1"],
         "argument --first-seed: expected an integer >= 0"),
    ]:
        capsys.readouterr()
        assert main(["bench", "diagnose", *argv]) == 2, argv
        captured = capsys.readouterr()
        err = captured.err.strip()
        assert err.startswith("aoe-tune bench diagnose: error: ") and want in err, (argv, err)
        assert "\n" not in err and "Traceback" not in err and not captured.out, argv
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.json.gz"]
