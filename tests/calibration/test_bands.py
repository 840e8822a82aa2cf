"""The shipped bands come from held-out figures only, and cannot go stale."""

from __future__ import annotations

import pytest

from aoe_optuna.calibration import layer_ops_validation
from aoe_optuna.calibration import leave_one_source_out as source_validation
from aoe_optuna.calibration.band_kinds import GEMM_LIBRARY, GEMM_TILED, KINDS
from aoe_optuna.calibration.band_table import document, markdown, recheck, stored_validation
from aoe_optuna.calibration.bands import (
    NEW_SOURCE,
    ONE_SOURCE,
    band,
    bands,
    shipped_bands,
    shipped_document,
)
from aoe_optuna.calibration.held_out import (
    GEMM_VALIDATION,
    LAYER_OPS_VALIDATION,
    HeldOutRow,
    gemm_fold_rows,
    layer_ops_fold_rows,
)
from aoe_optuna.calibration.published_gemm import PUBLISHED
from aoe_optuna.calibration.published_layer_ops import FIGURES
from aoe_optuna.calibration.published_layer_ops import KINDS as LAYER_OP_KINDS

GEMM_KINDS = (GEMM_LIBRARY, GEMM_TILED)
LAYER_CHECKED = ("decode_attention", "prefill_attention", "mla_decode_attention")


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
    assert sorted(r.name for r in rows if r.kind in GEMM_KINDS) == \
        sorted(f.name for f in PUBLISHED)
    gemm_folds = [f for f in doc["folds"] if f["validation"] == GEMM_VALIDATION]
    assert {f["source"] for f in gemm_folds} == {source_validation.tag(f) for f in PUBLISHED}
    in_sample = source_validation.in_use().tolist()
    # no fold is the in-sample fit: each was refitted with its source left out
    assert all(f["constants"] != pytest.approx(in_sample, rel=1e-3) for f in gemm_folds)


def test_attention_bands_hold_only_kernel_carrying_check_rows_one_fold_per_source() -> None:
    doc = shipped_document()
    rows = [r for r in stored_validation(doc).rows if r.kind not in GEMM_KINDS]
    simulated = layer_ops_validation.simulate()
    carrying = layer_ops_validation.band_rows(simulated)
    assert len(rows) == len(carrying) and {r.kind for r in rows} == set(LAYER_CHECKED)
    floors = layer_ops_validation.host_floors(FIGURES)
    for held, row in zip(rows, carrying, strict=True):
        f = row.figure
        assert f.role == "check" and (held.source, held.published_us) == (
            f"{f.source} {f.kernel}", f.time_us)  # a source's timings of one kernel
        assert not f.host or f.time_us > layer_ops_validation.RISEN * floors[(f.source, f.host)]
    fit = {(f"{f.source} {f.kernel}", f.time_us) for f in FIGURES if f.role == "fit"}
    assert not fit & {(r.source, r.published_us) for r in rows}
    # and the checks on their host's floor stay out too
    assert len(rows) < len(layer_ops_validation.checks(simulated))
    folds = [f for f in doc["folds"] if f["validation"] == LAYER_OPS_VALIDATION]
    assert [f["source"] for f in folds] == list(dict.fromkeys(f.source for f in FIGURES))
    assert all(f["constants"] == [] for f in folds)  # no constant fitted to these figures
    with pytest.raises(ValueError, match="store no fold constants"):
        layer_ops_fold_rows("pto-isa", [1.0])


def test_the_layer_op_kinds_are_band_kinds() -> None:
    assert set(LAYER_OP_KINDS) <= set(KINDS)


def test_a_fold_rerun_with_other_constants_moves_its_rows() -> None:
    fold = next(f for f in shipped_document()["folds"] if f["source"] == "catlass ex34")
    held = gemm_fold_rows("catlass ex34", fold["constants"])
    doubled = gemm_fold_rows("catlass ex34", [2 * c + 1 for c in fold["constants"]])
    assert all(a.simulated_us != b.simulated_us for a, b in zip(held, doubled, strict=True))


def test_the_validated_kinds_are_checked_and_the_others_unchecked_not_invented() -> None:
    shipped = shipped_bands()
    assert list(shipped) == list(KINDS)
    assert shipped[GEMM_TILED].checked and shipped[GEMM_TILED].figures == 32
    assert shipped[GEMM_TILED].sources == 4 and shipped[GEMM_TILED].high_is == NEW_SOURCE
    assert shipped[GEMM_LIBRARY].figures == 4 and shipped[GEMM_LIBRARY].high_is == ONE_SOURCE
    assert "one source" in shipped[GEMM_LIBRARY].text()
    # CANN's fused kernel and PTO's flash kernel, one author's timings of two kernels
    assert (shipped["prefill_attention"].figures, shipped["prefill_attention"].sources) == \
        (61, 2)
    assert shipped["decode_attention"].figures == 5
    assert shipped["decode_attention"].high_is == NEW_SOURCE
    # cann-bench's single-kernel cases: its RmsNorm and SwiGlu rows and its first five MLA
    # decode rows are seen (CANN's kernels were modelled after their misses were read): no
    # band; the four MLA cases added after CANN's MLA kernel was modelled check it
    assert (shipped["rmsnorm"].figures, shipped["swiglu"].figures,
            shipped["mla_decode_attention"].figures) == (0, 0, 4)
    for kind in set(KINDS) - {*GEMM_KINDS, *LAYER_CHECKED}:
        assert not shipped[kind].checked
        assert shipped[kind].text() == "unchecked (no held-out figures)"
    table = "\n".join(markdown(shipped_document()))
    assert "| rope | 0 | 0 | unchecked |" in table


def test_the_high_mark_is_a_new_sources_and_wide_where_sources_are_few() -> None:
    """Two sources that agree and two that do not: the band of the second is wider, and
    both are wider than the figures' own 80th percentile; one source says so and never
    states less than its largest error."""
    agree = [_row(GEMM_TILED, e, s) for s in "ab" for e in (0.05, 0.1, -0.02, 0.08)]
    differ = [_row(GEMM_TILED, e + (0.3 if s == "b" else 0.0), s) for s in "ab"
              for e in (0.05, 0.1, -0.02, 0.08)]
    a, d = band(GEMM_TILED, agree), band(GEMM_TILED, differ)
    assert a.high_is == NEW_SOURCE and a.sources == 2 and a.high > 0.1
    assert d.high > a.high + 0.2
    one = band(GEMM_TILED, [_row(GEMM_TILED, e) for e in (0.1, -0.3, 0.05)])
    assert one.high_is == ONE_SOURCE and one.high >= 0.3 and one.sources == 1
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


def test_a_calibrated_chips_band_is_its_own_leave_one_out_where_it_fitted_the_kind() -> None:
    from dataclasses import replace

    from aoe_optuna.calibration.bands import ON_CHIP, band_for
    from aoe_optuna.hardware.chip_calibration import ChipCalibration, FamilyConstants
    from aoe_optuna.hardware.profile import load_profile

    def fit(median: float, high: float) -> FamilyConstants:
        return FamilyConstants(1.1, 0.0, {"leave_one_out": {
            "median": median, "high": high, "high_is": "80th percentile of a new kernel",
            "kernels": 7}})

    base = load_profile("Ascend910B2")
    library = replace(base, calibration=ChipCalibration("Ascend910B2", {
        "gemm_library": fit(0.05, 0.12), "gemm_preload": fit(0.04, 0.09)}))
    own = band_for(GEMM_LIBRARY, library)
    assert own.high_is.startswith(ON_CHIP) and (own.median, own.high) == (0.05, 0.12)
    assert "on this chip" in own.text() and "7 kernels" in own.text()
    # the tiled kind has four families; with one fitted, the shipped band holds
    assert band_for(GEMM_TILED, library) == shipped_bands()[GEMM_TILED]
    tiled = replace(base, calibration=ChipCalibration("Ascend910B2", {
        f: fit(0.03 * i, 0.08 * i) for i, f in enumerate(
            ("gemm_pingpong", "gemm_preload", "gemm_padding", "gemm_split_k"), 1)}))
    widest = band_for(GEMM_TILED, tiled)
    assert (widest.median, widest.high) == pytest.approx((0.12, 0.32))  # the widest family
    assert band_for(GEMM_TILED, None) == shipped_bands()[GEMM_TILED]
