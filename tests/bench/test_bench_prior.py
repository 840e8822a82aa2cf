"""``aoe-tune bench --prior-space``: a recording of the same kernel as GP-UCB's prior."""

from __future__ import annotations

import json

import pytest
from kt_fixture import write_cache

from aoe_optuna.bench.command import main
from aoe_optuna.bench.compare import main as compare_main

OPTIMUM_S = 4.0e-3  # kt_fixture's (2, 2, 1)


def _args(tmp_path, *extra: str) -> list[str]:
    return ["--seeds", "1", "--budgets", "3", "--jobs", "1", "--kernel-tuner", "",
            "--out", str(tmp_path / "out"), *extra]


@pytest.mark.slow
def test_the_prior_leads_the_first_measurement_and_off_and_shuffled_are_rows(tmp_path, capsys):
    space, source = write_cache(tmp_path, name="tiny"), write_cache(tmp_path, name="other")
    rc = main(["--space", str(space), "--prior-space", str(source), "--sampler", "gp-ucb",
               "--sampler", 'gp-ucb:{"_prior": "off"}',
               "--sampler", 'gp-ucb:{"_prior": "shuffled"}', "--sampler", "random",
               *_args(tmp_path)])
    assert rc == 0
    lines = (tmp_path / "out" / "runs.jsonl").read_text().splitlines()
    runs = [json.loads(line) for line in lines]
    by = {r["sampler"]: r for r in runs}
    assert set(by) == {"gp-ucb", "gp-ucb [prior off]", "gp-ucb [prior shuffled]", "random"}
    assert {r["case"] for r in runs} == {"tiny.prior_other"}
    assert by["gp-ucb"]["costs"][0] == OPTIMUM_S  # the prior's best, measured first
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["cases"]["tiny.prior_other"]["prior"].endswith("other.json")
    capsys.readouterr()
    assert compare_main(["--space", str(space), "--prior-space", str(source), "--runs",
                         str(tmp_path / "out"), "--a", "gp-ucb", "--b", "gp-ucb [prior off]",
                         "--budget", "3"]) == 0
    out = capsys.readouterr().out
    assert "1 seeds (0-0), best/opt at 3" in out
    assert "measurements to within 2% of the optimum (median): a 1," in out


def _refused(tmp_path, capsys, *argv: str) -> str:
    assert main([*argv, *_args(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    return err


def test_bad_prior_arguments_are_one_line_and_nothing_is_written(tmp_path, capsys):
    space = write_cache(tmp_path, name="tiny")
    err = _refused(tmp_path, capsys, "--space", str(space), "--space", str(space),
                   "--prior-space", str(space), "--sampler", "gp-ucb")
    assert "--prior-space: expected one per --space (2" in err
    err = _refused(tmp_path, capsys, "--space", str(space), "--prior-space",
                   str(tmp_path / "missing.json"), "--sampler", "gp-ucb")
    assert "--prior-space" in err and "missing.json" in err
    err = _refused(tmp_path, capsys, "--space", str(space), "--prior-space", str(space),
                   "--sampler", 'gp-ucb:{"_prior": "maybe"}')
    assert "_prior: expected one of on, shuffled, off" in err


def test_a_knowledge_base_is_a_prior_space_and_has_nothing_to_shuffle(tmp_path, capsys):
    from pathlib import Path

    from aoe_optuna.bench.seed_run import Case, case_prior
    from aoe_optuna.export.kb import KnowledgeBase
    from aoe_optuna.export.kb_entry import make_entry

    spec = Path(__file__).resolve().parents[2] / "studies" / "qwen25_7b_decode_910b2.json"
    kb = KnowledgeBase()
    kb.merge(make_entry("Ascend910B4", "GemmKernel", "fp16", 1, 3584, 3584, "row_major",
                        {"tile_m": 16, "tile_k": 112, "tile_n": 256, "pipeline": 1,
                         "l1_prefetch": 1, "output_align": 1}, 80.0, None, "s", None))
    kb.save(tmp_path / "kb.json")
    case = Case.from_path(spec, prior=tmp_path / "kb.json")
    assert case.prior is not None and case.prior.kind == "kb"
    assert case_prior(case).name == "knowledge base kb.json (1 entry of GemmKernel)"
    err = _refused(tmp_path, capsys, "--space", str(spec), "--prior-space",
                   str(tmp_path / "kb.json"), "--sampler", 'gp-ucb:{"_prior": "shuffled"}')
    assert "a knowledge base's prior has no recorded values to shuffle" in err
