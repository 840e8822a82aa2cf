"""The study's convergence against the roofline, as a plot on its dashboard page.

Optuna's own history plot puts every trial on the x axis: the infeasible
proposals and the repeats answered from storage, which cost nothing, stretch
it. This one counts measurements only (what the budget counts) and draws the
best tokens/s so far beside the roofline and the baseline, so how far a run
got and how much room is left read off one picture. It is stored in the
study (``optuna_dashboard.save_plotly_graph_object``, under one id, so a
resumed run replaces it) and needs the ``dashboard`` extra (optuna-dashboard);
without it nothing is saved.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_FAILURE_KIND
from aoe_optuna.study.report import dashboard_writers
from aoe_optuna.study.run.objective import is_measured

GRAPH_ID = "convergence"  # the plot's id in the study: a later save replaces it
TITLE = "Convergence against the roofline"


@dataclass(frozen=True)
class Convergence:
    """Per measurement, in trial order: its trial, its tokens/s (None: failed), best so far."""

    trials: list[int]
    values: list[float | None]
    best: list[float | None]
    failure_kinds: list[str | None]


def convergence(trials: Sequence[FrozenTrial]) -> Convergence:
    """The measured trials in the order they were asked, with the running best."""
    numbers: list[int] = []
    values: list[float | None] = []
    best: list[float | None] = []
    kinds: list[str | None] = []
    top: float | None = None
    for t in sorted(trials, key=lambda t: t.number):
        if not is_measured(t):
            continue
        value = float(t.value) if t.state == TrialState.COMPLETE and t.value is not None else None
        if value is not None and math.isfinite(value):
            top = value if top is None else max(top, value)
        numbers.append(t.number)
        values.append(value)
        best.append(top)
        kinds.append(None if value is not None else t.user_attrs.get(ATTR_FAILURE_KIND))
    return Convergence(numbers, values, best, kinds)


class FigureJson(dict):
    """A plotly figure as the JSON plotly.js draws: ``{"data": [...], "layout": {...}}``.

    Built as plain data, not with ``plotly.graph_objects``: validating five traces through
    plotly's figure classes cost 0.2 s of CPU at the end of every run, for JSON the
    dashboard hands to plotly.js as it is. ``to_json`` is all the dashboard's writer asks.
    """

    def to_json(self) -> str:
        return json.dumps(self)


def convergence_figure(
    trials: Sequence[FrozenTrial], roofline: float | None, baseline: float | None
) -> FigureJson:
    """Best tokens/s so far against measurements, with the roofline and the baseline."""
    c = convergence(trials)
    x = list(range(1, len(c.trials) + 1))
    ok = [i for i, v in enumerate(c.values) if v is not None]
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "markers", "name": "measurement",
         "x": [x[i] for i in ok], "y": [c.values[i] for i in ok],
         "marker": {"size": 5, "opacity": 0.45}, "customdata": [c.trials[i] for i in ok],
         "hovertemplate": "measurement %{x} (trial %{customdata}): "
                          "%{y:,.4g} tokens/s<extra></extra>"},
        {"type": "scatter", "mode": "lines", "name": "best so far", "x": x, "y": c.best,
         "line": {"shape": "hv", "width": 2.5},
         "hovertemplate": "after %{x} measurements: best %{y:,.4g} tokens/s<extra></extra>"},
    ]
    failed = [i for i, v in enumerate(c.values) if v is None]
    if failed:
        floor = min((v for v in c.values if v is not None), default=0.0)
        data.append({
            "type": "scatter", "mode": "markers", "name": "failed",
            "x": [x[i] for i in failed], "y": [floor] * len(failed),
            "marker": {"symbol": "x", "size": 7, "color": "#d62728"},
            "customdata": [[c.trials[i], c.failure_kinds[i] or "failed"] for i in failed],
            "hovertemplate": "measurement %{x} (trial %{customdata[0]}): "
                             "%{customdata[1]}<extra></extra>"})
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for level, name, dash in ((roofline, "roofline", "dash"), (baseline, "baseline", "dot")):
        if level:  # a line across the plot's width at y = level, labelled at its left end
            shapes.append({"type": "line", "layer": "below", "xref": "x domain", "x0": 0,
                           "x1": 1, "yref": "y", "y0": level, "y1": level,
                           "line": {"dash": dash, "color": "#555555"}})
            annotations.append({"text": f"{name} {level:,.4g}", "showarrow": False,
                                "xref": "x domain", "x": 0, "xanchor": "left",
                                "yref": "y", "y": level, "yanchor": "bottom"})
    yaxis: dict[str, Any] = {"title": {"text": "tokens/s"}}
    if roofline:
        yaxis["range"] = [0, max([roofline, *(c.values[i] for i in ok)]) * 1.08]
    layout = {"title": {"text": TITLE}, "xaxis": {"title": {"text": "measurements"}},
              "yaxis": yaxis, "legend": {"orientation": "h", "y": -0.2},
              "shapes": shapes, "annotations": annotations}
    return FigureJson(data=data, layout=layout)


def save_convergence_plot(
    study: optuna.Study, roofline: float | None, baseline: float | None
) -> bool:
    """Store the plot in the study for the dashboard; False without the ``dashboard`` extra."""
    save_plotly_graph_object = dashboard_writers.save_plotly_graph_object()
    if save_plotly_graph_object is None:
        return False
    figure = convergence_figure(study.get_trials(deepcopy=False), roofline, baseline)
    save_plotly_graph_object(study, figure, graph_object_id=GRAPH_ID)
    return True
