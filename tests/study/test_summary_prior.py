"""The run summary and the dashboard note say which prior was used and how far it is trusted."""

from __future__ import annotations

import optuna
from optuna.distributions import IntDistribution
from rich.console import Console

from aoe_optuna.attrs import GP_PRIOR_ATTR
from aoe_optuna.study.report.prior_trust import latest_trust, trust_text
from aoe_optuna.study.report.summary import Summary, print_summary, summary_markdown

MEAN = {"name": "recording gemm_RTX_3060_laptop", "measured": 37, "mechanism": "mean",
        "correlation": 0.91, "weight": 0.82}


def _summary(prior: str | None) -> Summary:
    return Summary("s", "sqlite:///aoe.db", 80.0, 88.0, {"tile_m": 16}, 3, 110.0, 10, 0, 0, 0,
                   300.0, 1.0, "reached 10 measurements", export_kind="none", prior=prior)


def test_the_latest_record_is_the_trust_now() -> None:
    study = optuna.create_study()
    d = {"x": IntDistribution(0, 3)}
    for i, record in enumerate([{**MEAN, "weight": 0.1}, None, MEAN]):
        attrs = {} if record is None else {GP_PRIOR_ATTR: record}
        study.add_trial(optuna.trial.create_trial(params={"x": i}, distributions=d, value=1.0,
                                                  system_attrs=attrs))
    assert latest_trust(study.trials) == MEAN
    assert latest_trust(study.trials[1:2]) is None


def test_the_text_names_the_weight_or_says_the_prior_is_an_input() -> None:
    assert trust_text(MEAN) == ("recording gemm_RTX_3060_laptop: weight 0.82 in the GP's mean, "
                                "rank correlation 0.91 over 37 measured")
    feature = {"name": "simulator Ascend910B2", "mechanism": "feature", "measured": 5}
    assert trust_text(feature) == "simulator Ascend910B2: an input of the GP"
    start = {"name": "knowledge base kb.json", "stage": "start"}
    assert trust_text(start) == "knowledge base kb.json: guiding the start, not weighed yet"


def test_the_summary_and_the_note_carry_it() -> None:
    text = trust_text(MEAN)
    console = Console(width=80, record=True, color_system=None)
    print_summary(_summary(text), console)
    printed = console.export_text()
    assert max(map(len, printed.splitlines())) <= 80
    assert f"prior: {text}" in " ".join(printed.split())
    assert f"Prior: {text}." in summary_markdown(_summary(text))
    assert "Prior" not in summary_markdown(_summary(None))


def test_a_long_prior_name_keeps_its_line_at_80_and_100_columns() -> None:
    text = trust_text({**MEAN, "name": "knowledge base kb.json (5 entries of GemmKernel)"})
    for width in (80, 100):
        console = Console(width=width, record=True, color_system=None)
        print_summary(_summary(text), console)
        printed = console.export_text()
        assert max(map(len, printed.splitlines())) <= width
        assert "prior: knowledge base kb.json (5 entries of GemmKernel):\n  weight 0.82" in printed
