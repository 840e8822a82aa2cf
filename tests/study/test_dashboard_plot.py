"""The convergence plot counts measurements only and is stored once per study."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna.distributions import IntDistribution
from optuna.trial import TrialState, create_trial

from aoe_optuna.attrs import ATTR_FAILURE_KIND, ATTR_INFEASIBLE, ATTR_MEASURED, ATTR_REPEAT_OF
from aoe_optuna.study.report.dashboard_plot import (
    GRAPH_ID,
    convergence,
    convergence_figure,
    save_convergence_plot,
)

pytest.importorskip("optuna_dashboard", reason="the plot needs the dashboard extra")
DIST = {"x": IntDistribution(0, 100)}


def _trials() -> list[optuna.trial.FrozenTrial]:
    def done(x: int, value: float, **attrs: object) -> optuna.trial.FrozenTrial:
        return create_trial(params={"x": x}, distributions=DIST, value=value,
                            user_attrs={ATTR_MEASURED: True, **attrs})

    def failed(x: int, **attrs: object) -> optuna.trial.FrozenTrial:
        return create_trial(params={"x": x}, distributions=DIST, state=TrialState.FAIL,
                            user_attrs=attrs)

    return [
        done(1, 50.0),
        create_trial(params={"x": 2}, distributions=DIST, state=TrialState.PRUNED,
                     user_attrs={ATTR_INFEASIBLE: ["l0a"], ATTR_MEASURED: False}),
        failed(3, **{ATTR_FAILURE_KIND: "build", ATTR_MEASURED: True}),
        done(4, 40.0),
        done(1, 50.0, **{ATTR_REPEAT_OF: 0}),  # served from storage: no measurement
        failed(5),  # killed before its result was whole: not a measurement
        done(6, 70.0),
    ]


def _numbered(trials: list[optuna.trial.FrozenTrial]) -> list[optuna.trial.FrozenTrial]:
    study = optuna.create_study(direction="maximize")
    for t in trials:
        study.add_trial(t)
    return study.get_trials()


def test_convergence_counts_measurements_and_keeps_the_running_best() -> None:
    c = convergence(_numbered(_trials()))
    assert c.trials == [0, 2, 3, 6]
    assert c.values == [50.0, None, 40.0, 70.0]
    assert c.best == [50.0, 50.0, 50.0, 70.0]
    assert c.failure_kinds == [None, "build", None, None]


def test_figure_has_the_best_line_the_failures_and_the_roofline() -> None:
    fig = convergence_figure(_numbered(_trials()), roofline=100.0, baseline=50.0)
    traces = {t["name"]: t for t in fig["data"]}
    assert traces["best so far"]["y"] == [50.0, 50.0, 50.0, 70.0]
    assert traces["best so far"]["x"] == [1, 2, 3, 4]
    assert traces["failed"]["x"] == [2]
    assert traces["failed"]["customdata"] == [[2, "build"]]
    layout = fig["layout"]
    assert {s["y0"] for s in layout["shapes"]} == {100.0, 50.0}
    assert [a["text"] for a in layout["annotations"]] == ["roofline 100", "baseline 50"]
    assert layout["yaxis"]["title"]["text"] == "tokens/s"
    assert layout["yaxis"]["range"] == [0, 108.0]  # the roofline and 8% above it in view


def test_figure_is_one_plotly_accepts_as_it_is() -> None:
    """The hand-built JSON is a valid plotly figure: plotly's own validation takes it."""
    go = pytest.importorskip("plotly.graph_objects")
    fig = convergence_figure(_numbered(_trials()), roofline=100.0, baseline=None)
    checked = go.Figure(json.loads(fig.to_json()))  # raises on any key plotly lacks
    assert [t.name for t in checked.data] == ["measurement", "best so far", "failed"]
    assert checked.layout.shapes[0].xref == "x domain"


def test_saving_again_replaces_the_plot(tmp_path: Path) -> None:
    from optuna_dashboard._custom_plot_data import get_plotly_graph_objects

    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'p.db'}",
                                direction="maximize")
    for t in _trials()[:2]:
        study.add_trial(t)
    assert save_convergence_plot(study, 100.0, None)
    for t in _trials()[2:]:
        study.add_trial(t)
    assert save_convergence_plot(study, 100.0, None)
    plots = get_plotly_graph_objects(study._storage.get_study_system_attrs(study._study_id))
    assert list(plots) == [GRAPH_ID]
    data = json.loads(plots[GRAPH_ID])["data"]
    best = next(t for t in data if t["name"] == "best so far")
    assert best["y"] == [50.0, 50.0, 50.0, 70.0]
