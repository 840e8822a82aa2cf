"""Figures the simulator was not fitted to, each simulated by a model that never saw it.

A band must come from held-out figures only: an in-sample fit says how far the
constants bend to the table, not how far a kernel timed elsewhere lands. For
the GEMM model that is the leave-one-source-out validation of
:mod:`aoe_optuna.calibration.leave_one_source_out`: the fitted constants are
refitted without each source and the source is simulated with them. Each
fold's constants are kept with its rows, so a check can simulate the rows
again with them in a fraction of the refit's time.

The attention and vector models are validated the same way by their own
modules; each such validation is one more entry of :data:`VALIDATIONS` (a
function giving its rows, one :class:`Fold` per source left out) and of
:data:`FOLD_RECHECKS` (one fold's rows simulated again from its stored
constants; a model with no fitted constants stores an empty tuple and its
recheck simply simulates that source's figures). Kinds no validation covers
have no held-out figures, and their band says so.

The attention and vector validation (:mod:`.layer_ops_validation`) is such a
model: its chip constants come from hardware widths, host tiling and other
sources' fits, and the only numbers its figures set are each timing host's
dispatch floor, from that source's own ``fit`` row. So a fold is one source,
its constants empty, and its rows are the source's check rows that carry
kernel time; fit rows and rows on a host's floor never enter a band.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from aoe_optuna.calibration import layer_ops_validation, leave_one_source_out, residuals
from aoe_optuna.calibration.band_kinds import gemm_kind, layer_kind
from aoe_optuna.calibration.published_gemm import PUBLISHED, Published
from aoe_optuna.calibration.published_layer_ops import FIGURES


@dataclass(frozen=True)
class HeldOutRow:
    """One published figure, simulated with constants fitted without its source."""

    kind: str
    source: str
    name: str
    published_us: float
    simulated_us: float

    @property
    def error(self) -> float:
        """Relative error of the simulated time: simulated / published - 1."""
        return self.simulated_us / self.published_us - 1.0

    def document(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Fold:
    """One source left out: the constants fitted to the others (the validation's units)."""

    validation: str
    source: str
    constants: tuple[float, ...]


@dataclass(frozen=True)
class Validation:
    """What a leave-one-source-out run gives: every held-out row and each fold."""

    rows: tuple[HeldOutRow, ...]
    folds: tuple[Fold, ...]


GEMM_VALIDATION = "gemm leave-one-source-out (scripts/calibrate_simulator.py --validate)"


def _gemm_row(row: residuals.Row) -> HeldOutRow:
    figure = row.figure
    return HeldOutRow(gemm_kind(figure.config is not None), leave_one_source_out.tag(figure),
                      figure.name, figure.published_us, round(row.simulated_us, 6))


def gemm_held_out(figures: Sequence[Published] = PUBLISHED) -> Validation:
    """Each GEMM source simulated with the constants fitted to the other sources."""
    rows: list[HeldOutRow] = []
    folds: list[Fold] = []
    for source in dict.fromkeys(leave_one_source_out.tag(f) for f in figures):
        rest = [f for f in figures if leave_one_source_out.tag(f) != source]
        values = tuple(round(float(v), 9) for v in leave_one_source_out.fit(rest))
        folds.append(Fold(GEMM_VALIDATION, source, values))
        rows += gemm_fold_rows(source, values, figures)
    return Validation(tuple(rows), tuple(folds))


def gemm_fold_rows(source: str, values: Sequence[float],
                   figures: Sequence[Published] = PUBLISHED) -> list[HeldOutRow]:
    """The rows of ``source`` simulated with one fold's constants ``values``."""
    held = tuple(f for f in figures if leave_one_source_out.tag(f) == source)
    with leave_one_source_out.constants(values):
        return [_gemm_row(r) for r in residuals.table(held)]


LAYER_OPS_VALIDATION = ("attention and vector source by source "
                        "(scripts/validate_layer_ops.py)")


def _layer_row(row: layer_ops_validation.Row) -> HeldOutRow:
    """A layer figure's row; its band source is the source's timings of one kernel (one
    author times CANN's kernel and a hand-written one differently, and the model misses
    them differently)."""
    f = row.figure
    return HeldOutRow(layer_kind(f.kind), f"{f.source} {f.kernel}",
                      f"{f.what} [{f.host or 'on-core'}]", f.time_us,
                      round(row.simulated_us, 6))


def layer_ops_fold_rows(source: str, values: Sequence[float] = ()) -> list[HeldOutRow]:
    """The kernel-carrying check rows of ``source``, simulated as it timed them (the
    models have no constants fitted to these figures: ``values`` is always empty)."""
    if len(values):
        raise ValueError(f"{source}: the attention and vector models store no fold "
                         f"constants, got {list(values)}")
    rows = layer_ops_validation.simulate([f for f in FIGURES if f.source == source])
    return [_layer_row(r) for r in layer_ops_validation.band_rows(rows)]


def layer_ops_held_out() -> Validation:
    """Each attention and vector source, one fold each, its kernel-carrying check rows."""
    sources = tuple(dict.fromkeys(f.source for f in FIGURES))
    return Validation(tuple(r for s in sources for r in layer_ops_fold_rows(s)),
                      tuple(Fold(LAYER_OPS_VALIDATION, s, ()) for s in sources))


# Every leave-one-source-out validation the bands are taken from.
VALIDATIONS: dict[str, Callable[[], Validation]] = {
    GEMM_VALIDATION: gemm_held_out,
    LAYER_OPS_VALIDATION: layer_ops_held_out,
}

# How each validation's fold is simulated again from its stored constants.
FOLD_RECHECKS: dict[str, Callable[[str, Sequence[float]], list[HeldOutRow]]] = {
    GEMM_VALIDATION: gemm_fold_rows,
    LAYER_OPS_VALIDATION: layer_ops_fold_rows,
}


def all_held_out() -> Validation:
    """Every validation's rows and folds, in :data:`VALIDATIONS` order."""
    runs = [run() for run in VALIDATIONS.values()]
    return Validation(tuple(r for v in runs for r in v.rows),
                      tuple(f for v in runs for f in v.folds))
