"""The shipped band table: written from the held-out validations, and checked against them.

``scripts/error_bands.py`` runs every validation of :mod:`.held_out` and writes
:func:`document` to ``bands.json``; :func:`recheck` simulates each stored
fold's rows again with the fold's stored constants (seconds, where the refit
takes minutes), so a model change that moves any held-out figure shows as a
difference, and the bands are recomputed from the rows to the same numbers.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from aoe_optuna.calibration.bands import QUANTILE, bands, label
from aoe_optuna.calibration.held_out import FOLD_RECHECKS, Fold, HeldOutRow, Validation

COMMAND = "python scripts/error_bands.py"
VERSIONS = ("numpy", "scipy", "optuna")


def versions() -> dict[str, str]:
    return {"python": platform.python_version(),
            **{name: metadata.version(name) for name in VERSIONS}}


def document(validation: Validation, date: str | None = None) -> dict[str, Any]:
    """The JSON the script writes: how it was made, the bands, and what they rest on."""
    return {
        "command": COMMAND,
        "date": date or datetime.now(UTC).date().isoformat(),
        "versions": versions(),
        "rule": ("|simulated / published - 1| of figures simulated with constants fitted "
                 "without their source, grouped by source (one author's timings of one "
                 "kernel): log(simulated / published) = mu + source offset + figure noise, "
                 "the spread between sources pooled over the kinds (a kind's own where "
                 "wider); the band is the median and the "
                 f"{round(QUANTILE * 100)}th percentile of a new source's figure (Student t "
                 "on the between-source degrees of freedom); one source: the larger of that "
                 "and its largest error; no figures: unchecked"),
        "bands": [b.document() | {"label": label(b.kind)}
                  for b in bands(validation.rows).values()],
        "folds": [{"validation": f.validation, "source": f.source,
                   "constants": list(f.constants)} for f in validation.folds],
        "rows": [r.document() for r in validation.rows],
    }


def stored_validation(doc: dict[str, Any]) -> Validation:
    rows = tuple(HeldOutRow(**r) for r in doc["rows"])
    folds = tuple(Fold(f["validation"], f["source"], tuple(f["constants"]))
                  for f in doc["folds"])
    return Validation(rows, folds)


def recheck(doc: dict[str, Any]) -> Validation:
    """The stored folds' rows simulated again now, with the stored constants."""
    folds = stored_validation(doc).folds
    rows = [r for f in folds for r in FOLD_RECHECKS[f.validation](f.source, f.constants)]
    return Validation(tuple(rows), folds)


def markdown(doc: dict[str, Any]) -> list[str]:
    """The table docs/SIMULATOR.md quotes."""
    out = ["| kind | held-out figures | sources | median abs error | high | high is | "
           "median signed error |", "|---|---|---|---|---|---|---|"]  # of a new source
    for b in doc["bands"]:
        if b["median"] is None:
            out.append(f"| {b['label']} | 0 | 0 | unchecked | unchecked | | |")
            continue
        out.append(f"| {b['label']} | {b['figures']} | {b['sources']} | {b['median']:.1%} | "
                   f"{b['high']:.1%} | {b['high_is']} | {b['bias']:+.1%} |")
    return out
