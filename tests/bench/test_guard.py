"""aoe-tune bench guard: paired per seed against the stored reference; the short suite."""

from __future__ import annotations

import json

import pytest

from aoe_optuna.bench import guard
from aoe_optuna.cli.main import main


def _suite(per_seed: dict) -> dict:
    return {"sampler": "gp-ucb", "seeds": [0, 1, 2, 3], "budgets": [50],
            "spaces": ["x.json.gz"], "per_seed": per_seed}


def test_most_seeds_worse_is_named_one_seed_is_noise() -> None:
    ref = {"x.json.gz": {"50": {"0": 1.0, "1": 1.0, "2": 1.1, "3": 1.2}}}
    same = guard.compare(ref, ref)
    assert [r.worse or r.better for r in same] == [False]
    assert same[0].stats["ties"] == 4
    one = {"x.json.gz": {"50": {"0": 1.24, "1": 1.0, "2": 1.1, "3": 1.2}}}
    assert not guard.compare(one, ref)[0].worse  # one seed changing basin
    most = {"x.json.gz": {"50": {"0": 1.06, "1": 1.07, "2": 1.16, "3": 1.24}}}
    row = guard.compare(most, ref)[0]
    assert row.worse and "WORSE" in guard.table([row])
    assert guard.compare(ref, most)[0].better


def test_bad_arguments_are_one_line_and_exit_2(tmp_path, capsys) -> None:
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"suites": {"short": _suite({})}}))
    assert main(["bench", "guard", "--reference", str(ref), "--suite", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--suite nope" in err and "short" in err
    assert main(["bench", "guard", "--reference", str(tmp_path / "none.json")]) == 2
    assert "--reference" in capsys.readouterr().err
    assert main(["bench", "guard", "--reference", str(ref), "--runs", str(tmp_path)]) == 2
    assert "runs.jsonl" in capsys.readouterr().err
    assert not list(tmp_path.glob("aoe-guard-*"))


@pytest.mark.slow
@pytest.mark.skipif(not guard.DEFAULT_SPACES.is_dir(), reason="needs ../shared/spaces")
def test_short_suite_is_level_with_the_stored_reference(tmp_path, capsys) -> None:
    """The short form a sampler change runs: four dev spaces and two generated failure
    spaces; the stored reference was made by this code, so every seed ties."""
    assert main(["bench", "guard", "--suite", "short", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    doc = json.loads(guard.DEFAULT_REFERENCE.read_text())["suites"]["short"]
    assert out.count("| level |") == len(doc["spaces"]) * len(doc["budgets"])
    assert "no space worse" in out
    assert (tmp_path / "spaces" / "convolution_milo_A4000_failregions.json.gz").is_file()


def test_bench_help_lists_guard_and_guard_has_an_example(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert "  guard " in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        main(["bench", "guard", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: aoe-tune bench guard ")
    assert "example:\n" in out and "aoe-tune bench guard --suite short" in out
