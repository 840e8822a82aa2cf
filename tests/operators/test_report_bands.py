"""A simulated operator run shows each operator's band and the tokens/s band; the
knowledge base entries carry the band; a measured run shows none."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.console import Console

from aoe_optuna.backends.registry import backend_class
from aoe_optuna.calibration.band_kinds import GEMM_TILED
from aoe_optuna.calibration.bands import shipped_bands
from aoe_optuna.operators.kinds.registry import GEMM
from aoe_optuna.operators.layer_ops import layer_operators
from aoe_optuna.operators.outcome import (
    end_to_end_lines,
    headers,
    kb_entries,
    note_markdown,
    print_result,
    rows,
)
from aoe_optuna.operators.shapes import OperatorShape, operator_shapes
from aoe_optuna.operators.state import ShapeResult
from aoe_optuna.operators.tuner import OperatorResult
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.workload.step_split import tuned_split
from tests.operators.test_report_table import SERVING
from tests.operators.test_report_table import _result as table_result

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "studies" / "qwen25_7b_decode_layer_910b2.json"


def _result(simulated: bool) -> tuple[OperatorResult, object]:
    spec = load_spec(LAYER)
    shapes = [*operator_shapes(spec.workload), *layer_operators(spec.workload)]
    out = [ShapeResult(s, f"p/{s.label}", 10, 2, {"tile_m": 16} if s.operator_kind is GEMM
                       else s.default_config(spec.profile), 3,
                       50e-6, (49e-6, 51e-6), 50e-6, 60e-6, 20e-6)
           for s in shapes]
    latencies = {g.name: 50e-6 for g in spec.workload.gemms}
    split = tuned_split(spec.workload, spec.profile, latencies)
    return OperatorResult("p", out, 100, 80.0, 70.0, 99.0, split, simulated=simulated), spec


def test_each_kind_of_operator_shows_its_band_and_the_run_its_tokens_band() -> None:
    result, _ = _result(simulated=True)
    gemm = shipped_bands()[GEMM_TILED]
    console = Console(width=100, record=True, color_system=None)
    print_result(result, console)
    text = console.export_text()
    assert max(map(len, text.splitlines())) <= 100
    flat = " ".join(text.split())
    assert f"band, GEMM, tiling given: {gemm.text()}" in flat
    unchecked = flat.split("band, unchecked (no held-out figures): ")[1].split(" band,")[0]
    # the vector kernels: no held-out figure (cann-bench's RmsNorm and SwiGlu are seen)
    assert set(unchecked.split(", ")) == {"add rmsnorm", "rmsnorm", "rope", "swiglu"}
    decode = shipped_bands()["decode_attention"]
    assert f"band, decode attention: {decode.text()}" in flat
    assert "band, tokens/s: ±" in flat and "unchecked" in flat
    assert "band, tokens/s: ±" in note_markdown(result)


def test_a_measured_run_shows_no_band() -> None:
    result, _ = _result(simulated=False)
    assert "band" not in " ".join(end_to_end_lines(result))
    assert all(len(r) == len(headers(result)) for r in rows(result))


def test_the_widest_gemm_table_keeps_its_rows_whole_with_the_bands() -> None:
    shapes = operator_shapes(load_spec(SERVING).workload)
    shapes.append(OperatorShape(64, 18944, 152064, "bf16", ("gate_up_proj", "lm_head"), 28))
    result = dataclasses.replace(table_result(shapes), simulated=True)
    console = Console(width=100, record=True, color_system=None)
    print_result(result, console)
    lines = console.export_text().splitlines()
    assert max(map(len, lines)) <= 100
    for row in rows(result):
        assert any(all(cell in line for cell in row) for line in lines), row
    assert any(line.startswith("band, GEMM, tiling given: ±") for line in lines)
    assert not any("tokens/s:" in line for line in lines)  # no split, no tokens/s band


def test_the_knowledge_base_entries_of_a_simulated_run_carry_their_band() -> None:
    result, spec = _result(simulated=True)
    entries = kb_entries(result, spec, "sqlite:///aoe.db")
    gemm = next(e for e in entries if e.get("kind", "gemm") == "gemm")
    assert gemm["band"] == {"kind": GEMM_TILED, "median": shipped_bands()[GEMM_TILED].median,
                            "high": shipped_bands()[GEMM_TILED].high,
                            "high_is": "80th percentile"}
    layer = next(e for e in entries if e.get("kind") == "vector")
    assert layer["band"]["median"] is None and layer["band"]["kind"] == layer["op"]
    measured = dataclasses.replace(spec, backend={**spec.backend, "name": "npu"},
                                   backend_kind=backend_class("npu"))
    assert all("band" not in e for e in kb_entries(result, measured, "sqlite:///aoe.db"))
