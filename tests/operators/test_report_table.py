"""The operators table reads whole on a 100-column terminal; shapes are MxNxK in it and in
the knowledge base's lines."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from aoe_optuna.export.kb_entry import describe_key, entry_key, make_entry
from aoe_optuna.operators.outcome import export_kernels, kb_entries, print_result, rows
from aoe_optuna.operators.shapes import OperatorShape, operator_shapes
from aoe_optuna.operators.state import ShapeResult
from aoe_optuna.operators.tuner import OperatorResult
from aoe_optuna.spec.loader import load_spec

ROOT = Path(__file__).resolve().parents[2]
SERVING = ROOT / "studies" / "qwen25_7b_serving_catlass_910b2.json"


def _result(shapes: list[OperatorShape]) -> OperatorResult:
    """Every shape of a workload with wide figures: thousands of microseconds, a
    re-timed interval, hundreds of measurements."""
    out = []
    for i, shape in enumerate(shapes):
        latency = 1234.56e-6 * (1 + i)
        out.append(ShapeResult(shape, f"parent/{shape.label}/{shape.dims}", 480, 12,
                               {"tile_m": 16}, 7, latency, (latency / 1.014, latency * 1.014),
                               latency, latency * 1.05, latency * 0.8))
    return OperatorResult("CatlassGemm-Ascend910B2-qwen2.5-7b-decode-b1_16_64-operators", out,
                          5000, 755.44, 741.89, 994.74)


def test_the_table_is_whole_at_100_columns() -> None:
    shapes = operator_shapes(load_spec(SERVING).workload)
    # the widest a shape gets: a shared name (+n) and a dtype suffix
    shapes.append(OperatorShape(64, 18944, 152064, "bf16", ("gate_up_proj", "lm_head"), 28))
    result = _result(shapes)
    console = Console(width=100, record=True, color_system=None)
    print_result(result, console)
    text = console.export_text()
    assert "…" not in text, text
    assert max(map(len, text.splitlines())) <= 100
    lines = text.splitlines()
    for row in rows(result):
        # each row's cells appear whole, in order, on one line of the table
        assert any(all(cell in line for cell in row) for line in lines), (row, text)


def test_shapes_are_mxnxk_in_the_table_and_in_the_knowledge_base() -> None:
    shape = OperatorShape(M=1, K=3584, N=4608, dtype="fp16", names=("qkv_proj",), weight=28)
    entry = make_entry("Ascend910B2", "gemm", "fp16", shape.M, shape.K, shape.N, "row_major",
                       {"tile_m": 16}, 1.0, None, "s", "sqlite:///aoe.db", objective="TFLOPS")
    assert shape.dims == "1x4608x3584"
    assert f" {shape.dims} " in describe_key(entry_key(entry))


def test_a_batched_shape_has_its_own_kb_entry_and_is_not_exported_as_a_single_gemm(
        tmp_path: Path) -> None:
    spec = load_spec(SERVING)
    single = OperatorShape(1, 128, 512, "fp16", ("single",), 1)
    batched = OperatorShape(1, 128, 512, "fp16", ("q_absorb",), 27, batch=16)
    result = _result([single, batched])
    entries = kb_entries(result, spec, "sqlite:///aoe.db")
    keys = [entry_key(e) for e in entries]
    assert keys[0][1] == spec.op_name and keys[1][1] == f"{spec.op_name}-batch16"
    assert len(set(keys)) == 2  # the batch never overwrites the single GEMM's entry
    exports = export_kernels(result, spec, "sqlite:///aoe.db", tmp_path, None)
    assert exports.lines[-1] == (
        "not exported q_absorb 1x512x128-b16: batch=16: a batched GEMM runs "
        "catlass's Gemm::Kernel::BatchedMatmul (examples/01_batched_matmul), "
        "which the npu backend does not render")
    assert exports.not_exported == ["q_absorb 1x512x128-b16"]
    assert exports.closing_line(2) == ("not exported 1 of 2 kernels: q_absorb 1x512x128-b16 "
                                       "(each line above says why)")
    assert [p.name for p in tmp_path.iterdir()] == ["single_1x512x128.h"]


def test_at_80_columns_each_shape_goes_under_its_op_broken_after_a_separator() -> None:
    from aoe_optuna.operators.outcome import break_at_separators

    assert break_at_separators("b1-q28-kv4-d128-s1024", 12) == "b1-q28-kv4-\nd128-s1024"
    assert break_at_separators("1x152064x3584", 8) == "1x\n152064x\n3584"
    shapes = operator_shapes(load_spec(SERVING).workload)
    result = _result(shapes)
    console = Console(width=80, record=True, color_system=None)
    print_result(result, console)
    lines = console.export_text().splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in "\n".join(lines)
    at = 0
    for row in rows(result):  # in order: an op name recurs once per batch size
        at = next(i for i in range(at, len(lines)) if lines[i].startswith(row[0] + " "))
        assert all(cell in lines[at] for cell in row[2:]), (row, lines[at])
        under = "".join(line.strip() for line in lines[at + 1:at + 3]
                        if line.startswith(" ") and line.strip())
        assert under.startswith(row[1]), (row[1], lines[at:at + 3])  # whole, in order
        at += 1
