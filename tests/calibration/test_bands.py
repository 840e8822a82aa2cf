"""The shipped bands come from held-out figures only, and cannot go stale."""

from __future__ import annotations

import pytest

from aoe_optuna.calibration import leave_one_source_out as source_validation
from aoe_optuna.calibration.band_kinds import GEMM_LIBRARY, GEMM_TILED, KINDS
from aoe_optuna.calibration.band_table import document, markdown, recheck, stored_validation
from aoe_optuna.calibration.bands import band, bands, shipped_bands, shipped_document
from aoe_optuna.calibration.held_out import GEMM_VALIDATION, HeldOutRow, gemm_fold_rows
from aoe_optuna.calibration.published_gemm import PUBLISHED


def _row(kind: str, error: float, source: str = "s") -> HeldOutRow:
    return HeldOutRow(kind, source, f"f{error}", 100.0, 100.0 * (1 + error))


def test_the_shipped_rows_are_what_the_stored_folds_simulate_now() -> None:
    doc = shipped_document()
    again = recheck(doc)
    stored = stored_validation(doc)
    assert [(r.kind, r.source, r.name) for r in again.rows] == \
        [(r.kind, r.source, r.name) for r in stored.rows]
    for now, then in zip(again.rows, stored.rows, strict=True):
        assert now.simulated_us == pytest.approx(then.simulated_us, rel=1e-6), now.name
    # and the bands are exactly what those rows give
    assert document(again, doc["date"])["bands"] == doc["bands"]


def test_every_published_gemm_figure_is_held_out_once_by_a_fold_without_its_source() -> None:
    doc = shipped_document()
    rows = stored_validation(doc).rows
    assert sorted(r.name for r in rows) == sorted(f.name for f in PUBLISHED)
    folds = {f["source"] for f in doc["folds"] if f["validation"] == GEMM_VALIDATION}
    assert folds == {source_validation.tag(f) for f in PUBLISHED}
    in_sample = source_validation.in_use().tolist()
    # no fold is the in-sample fit: each was refitted with its source left out
    assert all(f["constants"] != pytest.approx(in_sample, rel=1e-3) for f in doc["folds"])


def test_a_fold_rerun_with_other_constants_moves_its_rows() -> None:
    fold = next(f for f in shipped_document()["folds"] if f["source"] == "catlass ex34")
    held = gemm_fold_rows("catlass ex34", fold["constants"])
    doubled = gemm_fold_rows("catlass ex34", [2 * c + 1 for c in fold["constants"]])
    assert all(a.simulated_us != b.simulated_us for a, b in zip(held, doubled, strict=True))


def test_the_gemm_kinds_are_checked_and_the_others_unchecked_not_invented() -> None:
    shipped = shipped_bands()
    assert list(shipped) == list(KINDS)
    assert shipped[GEMM_TILED].checked and shipped[GEMM_TILED].figures == 32
    assert shipped[GEMM_LIBRARY].figures == 5 and shipped[GEMM_LIBRARY].high_is == "largest of 5"
    for kind in set(KINDS) - {GEMM_TILED, GEMM_LIBRARY}:
        assert not shipped[kind].checked
        assert shipped[kind].text() == "unchecked (no held-out figures)"
    table = "\n".join(markdown(shipped_document()))
    assert "| decode attention | 0 | 0 | unchecked |" in table


def test_the_high_mark_is_a_quantile_from_ten_figures_and_the_largest_below() -> None:
    few = band(GEMM_TILED, [_row(GEMM_TILED, e) for e in (0.1, -0.3, 0.05)])
    assert few.high == pytest.approx(0.3) and few.median == pytest.approx(0.1)
    assert few.high_is == "largest of 3"
    many = band(GEMM_TILED, [_row(GEMM_TILED, e / 100) for e in range(1, 11)])
    assert many.high_is == "80th percentile" and many.high == pytest.approx(0.082)
    assert bands([])[GEMM_TILED].median is None


def test_the_shipped_file_says_how_it_was_made() -> None:
    doc = shipped_document()
    assert doc["command"] == "python scripts/error_bands.py"
    assert {"python", "numpy", "scipy", "optuna"} <= set(doc["versions"])


@pytest.mark.slow  # one leave-one-source-out refit: about a minute
def test_a_stored_fold_is_the_refit_the_script_makes_now() -> None:
    fold = next(f for f in shipped_document()["folds"] if f["source"] == "catlass ex44")
    rest = [f for f in PUBLISHED if source_validation.tag(f) != "catlass ex44"]
    assert source_validation.fit(rest).tolist() == pytest.approx(fold["constants"], rel=1e-4,
                                                                   abs=1e-6)


def test_the_simulator_doc_holds_the_shipped_table() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "SIMULATOR.md").read_text()
    assert "\n".join(markdown(shipped_document())) in doc
    assert "    python scripts/error_bands.py\n" in doc
