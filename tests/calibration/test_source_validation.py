"""The validation discipline: figures by source, leave-one-source-out, sweep order."""

from __future__ import annotations

import numpy as np

from aoe_optuna.aicore.pipes import transfer
from aoe_optuna.calibration import (
    leave_one_source_out as source_validation,
)
from aoe_optuna.calibration import (
    residuals as calibration,
)
from aoe_optuna.calibration.published_gemm import PUBLISHED, RANKING_PAIRS, Published


def _row(name: str, source: str, published: float, simulated: float,
         shape: tuple[int, int, int] = (128, 256, 1024)) -> calibration.Row:
    m, n, k = shape
    figure = Published(name, source, "Ascend910B3", m, n, k, "fp16", published, {"tile_m": 128})
    return calibration.Row(figure, simulated, {"tile_m": 128})


def test_every_published_figure_has_a_named_source() -> None:
    tags = {source_validation.tag(f) for f in PUBLISHED}
    assert tags <= set(source_validation.SOURCE_TAGS.values())
    assert len(tags) >= 5


def test_constants_are_restored_after_a_trial_fit() -> None:
    before = source_validation.in_use()
    with source_validation.constants(before * 2.0):
        assert np.isclose(transfer.STREAM_LINE_HBM_S * 1e9, before[3] * 2.0)
    assert np.array_equal(source_validation.in_use(), before)


def test_a_fit_only_sees_the_figures_it_is_given() -> None:
    guide = [f for f in PUBLISHED if source_validation.tag(f) == "catlass guide"]
    rest = [f for f in PUBLISHED if source_validation.tag(f) != "catlass guide"]
    names = {f.name for f in rest}
    pairs = [p for p in RANKING_PAIRS if p[0] in names and p[1] in names]
    got = source_validation.residuals(source_validation.in_use(), rest)
    assert len(got) == len(rest) + len(pairs)
    assert len(source_validation.residuals(source_validation.in_use(), guide)) > len(guide)


def test_a_constant_no_figure_shows_is_switched_off_not_carried_over() -> None:
    # only example 34 has rows that start inside a line: without it the misaligned-start
    # cost is invisible, and keeping its value in use would leak example 34 into its
    # own leave-one-out prediction
    names = [name for _, name, _, _ in source_validation.FITTED]
    mis = names.index("STREAM_MISALIGNED_S")
    rest = tuple(f for f in PUBLISHED if source_validation.tag(f) != "catlass ex34")
    seen = source_validation.identified(rest, source_validation.in_use())
    assert not seen[mis] and seen[names.index("STREAM_LINE_HBM_S")]
    assert source_validation.identified(PUBLISHED, source_validation.in_use())[mis]


def test_source_error_is_the_median_and_worst_of_the_ratios() -> None:
    rows = [_row("a", "x", 10.0, 10.9), _row("b", "x", 10.0, 7.0), _row("c", "x", 10.0, 10.5)]
    e = source_validation.source_error("x", rows)
    assert (e.figures, e.within_10) == (3, 2)
    assert np.isclose(e.median_error, 0.09) and np.isclose(e.max_error, 0.30)
    assert np.isclose(e.median_ratio, 1.05)


def test_a_sweep_reports_its_order_and_where_the_published_best_lands() -> None:
    rows = [_row("t1", "x", 10.0, 30.0), _row("t2", "x", 20.0, 20.0),
            _row("t3", "x", 30.0, 10.0), _row("t4", "x", 40.0, 40.0),
            _row("other shape", "x", 5.0, 5.0, (64, 64, 64)),
            _row("library", "x", 5.0, 5.0)]
    rows[-1] = calibration.Row(Published("library", "x", "Ascend910B3", 128, 256, 1024,
                                         "fp16", 5.0), 5.0, {})
    (sweep,) = source_validation.sweeps(rows)
    assert sweep.names == ("t1", "t2", "t3", "t4")
    assert np.isclose(sweep.spearman, 0.2)  # ranks 3,2,1,4: 1 - 6*8/60
    assert sweep.best_rank == 3


def test_published_sweeps_are_found_in_the_calibration_table() -> None:
    found = source_validation.sweeps(calibration.table())
    assert sum(s.size for s in found) >= 20
    assert all(-1.0 <= s.spearman <= 1.0 and 1 <= s.best_rank <= s.size for s in found)
