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
    # a run that ends within the start, before the model weighs the prior, still names it
    short = f"sqlite:///{tmp_path / 'short.db'}"
    assert main(["--config", QWEN, "--storage", short, "--study-name", "q", "--n-trials", "3",
                 "--prior", f"study:src@{source}", "--seed", "0", "--no-progress"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "prior: study src: guiding the start, not weighed yet" in out


@pytest.mark.parametrize(("prior", "needle"), [
    ("maybe", "--prior: expected none, simulator, model, study:NAME@URL, recording:PATH or "
              "kb:PATH"),
    ("kb:{tmp}/none.json", "prior.kb: {tmp}/none.json: does not exist; expected a knowledge"),
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


def test_a_knowledge_base_is_the_prior_its_winner_measured_first(tmp_path: Path,
                                                                 capsys) -> None:
    """A KB entry of the same op at another batch size, from another SoC: its winner is
    the first config measured after the baseline, and the summary names the KB."""
    from aoe_optuna.export.kb import KnowledgeBase
    from aoe_optuna.export.kb_entry import make_entry

    winner = {"tile_m": 16, "tile_k": 112, "tile_n": 256, "pipeline": 1, "l1_prefetch": 1,
              "output_align": 1}
    kb = KnowledgeBase()
    kb.merge(make_entry("Ascend910B4", "GemmKernel", "fp16", 8, 3584, 3584, "row_major",
                        winner, 80.0, None, "elsewhere", None))
    kb.save(tmp_path / "kb.json")
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["--config", QWEN, "--storage", url, "--study-name", "q", "--n-trials", "10",
                 "--prior", f"kb:{tmp_path / 'kb.json'}", "--seed", "0",
                 "--no-progress"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "prior: knowledge base kb.json (1 entry of GemmKernel)" in out
    trials = optuna.load_study(study_name="q", storage=url).trials
    assert trials[1].params == winner  # trial 0 is the spec's baseline


def test_a_knowledge_base_without_the_studys_op_is_one_line(tmp_path: Path, capsys) -> None:
    from aoe_optuna.export.kb import KnowledgeBase
    from aoe_optuna.export.kb_entry import make_entry

    kb = KnowledgeBase()
    kb.merge(make_entry("Ascend910B2", "OtherGemm", "fp16", 1, 3584, 3584, "row_major",
                        {"tile_m": 16, "tile_k": 112, "tile_n": 256}, 80.0, None, "x", None))
    kb.save(tmp_path / "kb.json")
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["--config", QWEN, "--storage", url, "--n-trials", "3",
                 "--prior", f"kb:{tmp_path / 'kb.json'}", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "prior.kb:" in err and "expected an entry of op GemmKernel, holds none of 1" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "aoe.db").exists()
