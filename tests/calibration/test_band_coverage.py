"""The shipped bands hold for the source each is not taken from: leave each source out."""

from __future__ import annotations

from aoe_optuna.calibration.band_coverage import leave_one_source_out, markdown
from aoe_optuna.calibration.band_table import stored_validation
from aoe_optuna.calibration.bands import QUANTILE, bands, shipped_document
from aoe_optuna.calibration.held_out import HeldOutRow


def _row(kind: str, source: str, error: float) -> HeldOutRow:
    return HeldOutRow(kind, source, f"{source}{error}", 100.0, 100.0 * (1 + error))


def test_every_kind_of_two_sources_covers_80_percent_of_a_left_out_sources_figures() -> None:
    coverage = leave_one_source_out(stored_validation(shipped_document()).rows)
    assert coverage and all(len(k.sources) >= 2 for k in coverage)
    for kind in coverage:
        assert kind.share >= QUANTILE, (kind.kind, kind.share)


def test_a_left_out_source_is_out_of_its_kinds_band_and_of_the_pooled_spread() -> None:
    """Two kinds: a left-out source of the first must not widen or narrow the band it is
    checked by; the second kind's sources still inform the pooled spread."""
    rows = [_row("gemm_tiled", "a", e) for e in (0.01, 0.02, -0.01)] + \
        [_row("gemm_tiled", "b", e) for e in (0.03, 0.0, 0.02)] + \
        [_row("gemm_tiled", "far", e) for e in (0.9, 1.1, 1.0)] + \
        [_row("decode_attention", "x", e) for e in (0.1, 0.12)] + \
        [_row("decode_attention", "y", e) for e in (-0.1, -0.12)]
    coverage = {k.kind: k for k in leave_one_source_out(rows)}
    far = next(s for s in coverage["gemm_tiled"].sources if s.source == "far")
    without = bands([r for r in rows if r.source != "far"])["gemm_tiled"]
    assert far.high == without.high and far.covered == 0  # a source unlike the others
    assert bands(rows)["gemm_tiled"].high > 2 * without.high  # its spread widens the band
    table = "\n".join(markdown(list(coverage.values())))
    assert "| gemm_tiled | far | 3 |" in table and "**decode_attention**" in table


def test_the_simulator_doc_holds_the_coverage_table() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "SIMULATOR.md").read_text()
    table = markdown(leave_one_source_out(stored_validation(shipped_document()).rows))
    assert "\n".join(table) in doc and "python scripts/band_coverage.py" in doc
