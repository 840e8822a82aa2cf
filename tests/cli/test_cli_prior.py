"""``aoe-tune --prior``: another study as the prior, its trust in the summary."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from aoe_optuna.attrs import GP_PRIOR_ATTR
from aoe_optuna.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")


@pytest.mark.slow
def test_another_study_is_the_prior_and_the_summary_says_how_far_it_is_trusted(
        tmp_path: Path, capsys) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    assert main(["--config", QWEN, "--storage", source, "--study-name", "src", "--n-trials",
                 "12", "--sampler", "random", "--seed", "0", "--no-progress"]) == 0
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["--config", QWEN, "--storage", url, "--study-name", "q", "--n-trials", "10",
                 "--prior", f"study:src@{source}", "--seed", "0", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "prior: study src: weight" in " ".join(out.split())
    study = optuna.load_study(study_name="q", storage=url)
    records = [t.system_attrs[GP_PRIOR_ATTR] for t in study.trials
               if GP_PRIOR_ATTR in t.system_attrs]
    assert records and records[-1]["name"] == "study src"


@pytest.mark.parametrize(("prior", "needle"), [
    ("maybe", "--prior: expected none, simulator, study:NAME@URL or recording:PATH"),
    ("study:x@sqlite:///{tmp}/none.db", "prior.storage: {tmp}/none.db does not exist"),
    ("recording:{tmp}/none.json.gz", "prior.recording: path: expected an existing"),
])
def test_a_prior_that_cannot_be_read_is_one_line_and_nothing_is_written(
        tmp_path: Path, capsys, prior: str, needle: str) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["--config", QWEN, "--storage", url, "--n-trials", "3",
                 "--prior", prior.format(tmp=tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert needle.format(tmp=tmp_path) in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "aoe.db").exists()
