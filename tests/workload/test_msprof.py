"""msprof op summaries: MatMul rows become merged GEMMs (transposes, FRACTAL_NZ, batches,
groups), the rest is the fixed time, and a malformed row is one line naming it."""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

import pytest

from aoe_optuna.workload.files import WorkloadFileError
from aoe_optuna.workload.gemm import Gemm, Workload
from aoe_optuna.workload.models import model_workload
from aoe_optuna.workload.msprof import (
    GEMM_OP_TYPES,
    profiled_workload,
    read_op_summary,
    step_from_document,
)

from .conftest import PROFILES_DIR

SAMPLE = PROFILES_DIR / "op_summary_qwen25_7b_decode_b1_910b2.csv"
HEADER = ["Device_id", "OP Type", "Task Type", "Task Start Time(us)", "Task Duration(us)",
          "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
          "Output Formats"]


def write(tmp_path: Path, rows: list[list[str]], header: list[str] = HEADER) -> Path:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(header)
    w.writerows(rows)
    path = tmp_path / "op_summary_0_1.csv"
    path.write_text(out.getvalue())
    return path


def mm(shapes: str, out: str, us: float = 10.0, op: str = "MatMulV2",
       types: str = "FLOAT16;FLOAT16", formats: str = "ND;ND", device: str = "0") -> list[str]:
    return [device, op, "AI_CORE", "100.0\t", str(us), shapes, types, formats, out, "ND"]


def vec(us: float, op: str = "RmsNorm", task: str = "AI_VECTOR_CORE",
        device: str = "0") -> list[str]:
    return [device, op, task, "1.0\t", str(us), "1,8", "FLOAT16", "ND", "1,8", "ND"]


def test_sample_profile_is_the_qwen_decode_step(profile):
    step = read_op_summary(SAMPLE)
    builtin = model_workload(profile, "qwen2.5-7b", "decode", batch=1)
    assert {g.key + (g.count,) for g in step.gemms} == {g.key + (g.count,) for g in
                                                         builtin.gemms}
    with SAMPLE.open() as f:
        rows = list(csv.DictReader(f))
    total = sum(float(r["Task Duration(us)"]) for r in rows)
    matmul = sum(float(r["Task Duration(us)"]) for r in rows if r["OP Type"] == "MatMulV2")
    wl = profiled_workload(step, "sample", tokens_per_step=1)
    assert wl.fixed_s == pytest.approx((total - matmul) * 1e-6)
    assert wl.details["profiled_step_s"] == pytest.approx(total * 1e-6)
    latencies = {g.name: wl.details[f"profiled_s/{g.name}"] for g in wl.gemms}
    assert wl.tokens_per_s(latencies) == pytest.approx(1e6 / total)  # the profiled rate


def test_transposes_nz_batches_groups_and_merging(tmp_path: Path):
    path = write(tmp_path, [
        mm("16,3584;4608,3584;4608", "16,4608", 20),   # weight (N, K), bias
        mm("3584,16;3584,4608", "16,4608", 22),        # A stored (K, M)
        mm("16,3584;224,2368,16,16", "16,37888", 200, formats="ND;FRACTAL_NZ"),
        mm("2,8,3584;3584,3584", "2,8,3584", 30),      # leading dims fold into M
        mm("8,16,128;8,128,64", "8,16,64", 5, op="BatchMatMulV2"),
        mm("64,2048;8,2048,1536;8", "64,1536", 12, op="GroupedMatmul",
           types="FLOAT16;FLOAT16;INT64"),
        mm("16,3584;3584,4608", "16,4608", 9, op="QuantBatchMatmulV3", types="INT8;INT8"),
        mm("16,3584;3584,4608", "16,4608", 40, op="WeightQuantBatchMatmulV2",
           types="FLOAT16;INT8"),
        vec(4.0), vec(50.0, "hcom_allReduce_", "COMMUNICATION"),
    ])
    step = read_op_summary(path)
    got = {g.name: g for g in step.gemms}
    assert got["gemm_16x3584x4608_fp16"] == Gemm(16, 3584, 4608, "fp16",
                                                  "gemm_16x3584x4608_fp16", 2)
    assert got["gemm_16x3584x37888_fp16"].count == 1
    assert "gemm_16x3584x3584_fp16" in got
    assert got["gemm_16x128x64_fp16"].count == 8
    assert got["gemm_8x2048x1536_fp16"].count == 8
    assert got["gemm_16x3584x4608_int8"].count == 1
    assert len(step.gemms) == 6
    profiled = dict(zip([g.name for g in step.gemms], step.profiled_us, strict=True))
    assert profiled["gemm_16x3584x4608_fp16"] == pytest.approx(21.0)  # (20 + 22) / 2
    assert profiled["gemm_16x128x64_fp16"] == pytest.approx(5 / 8)
    assert step.other_us == pytest.approx(4 + 50 + 40)
    assert (step.comm_us, step.untuned_us) == (50.0, 40.0)
    again = step_from_document(step.document(), "<stored>")
    assert again == step


def test_steps_divide_counts_and_one_device_is_read(tmp_path: Path):
    rows = []
    for _ in range(3):
        rows += [mm("4,512;512,512", "4,512", 3), mm("4,512;512,512", "4,512", 3),
                 vec(1.0), mm("4,512;512,512", "4,512", 99, device="1"), vec(7.0, device="1")]
    path = write(tmp_path, rows)
    step = read_op_summary(path, steps=3)
    assert [(g.M, g.count) for g in step.gemms] == [(4, 2)]
    assert step.other_us == pytest.approx(1.0)
    other = read_op_summary(path, steps=3, device=1)
    assert other.profiled_us == (99.0,) and other.other_us == pytest.approx(7.0)
    wl = profiled_workload(step, "x", tokens_per_step=4)
    assert wl.tokens_per_s({"gemm_4x512x512_fp16": 3e-6}) == pytest.approx(4 / 7e-6)


@pytest.mark.parametrize(("rows", "phrase"), [
    ([mm("1,8;8,8", "1,8", "x")], "line 2, column 'Task Duration(us)': expected a duration"),
    ([mm("1,8;8,8", "1,8", -1)], "line 2, column 'Task Duration(us)'"),
    ([mm("1,8;8,8", "1,8", types="FLOAT17;FLOAT17")],
     "line 2, column 'Input Data Types': expected element types fp16, bf16"),
    ([mm("1,8;9,9", "1,8")], "line 2, column 'Input Shapes': expected a second input holding "
                             "K = 8 and the output's N = 8"),
    ([mm("2,8;8,8", "1,8")], "line 2, column 'Input Shapes': expected a first input holding "
                             "the output's M = 1"),
    ([mm("1,a;8,8", "1,8")], "line 2, column 'Input Shapes': expected dimensions as integers"),
    ([mm("1,8", "1,8")], "line 2, column 'Input Shapes': expected two matrix inputs"),
    ([mm("1,8;8,8", "N/A")], "line 2, column 'Output Shapes'"),
    ([mm("1,8;8,8", "1,8", types="FLOAT16")], "line 2, column 'Input Data Types'"),
    ([vec(1.0), vec(2.0)], "column 'OP Type': expected at least one MatMul-type operator"),
    ([mm("1,8;8,8", "1,8", types="FLOAT16;INT8")], "none of a type the kernels take"),
    ([], "document: expected a header and a row per task"),
])
def test_bad_profile_is_one_line_naming_the_row(tmp_path: Path, rows, phrase):
    path = write(tmp_path, rows)
    with pytest.raises(ValueError) as info:
        read_op_summary(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and phrase in msg and "\n" not in msg, msg


def test_missing_column_and_device(tmp_path: Path):
    path = write(tmp_path, [mm("1,8;8,8", "1,8")[:4]], HEADER[:4])
    with pytest.raises(ValueError, match=r"line 1: expected an msprof op_summary CSV header "
                       r"with the columns .*, got no column 'Task Duration\(us\)'"):
        read_op_summary(path)
    path = write(tmp_path, [mm("1,8;8,8", "1,8")])
    with pytest.raises(ValueError, match=r"column 'Device_id': expected device 3 among the "
                       r"rows, got devices \[0\]"):
        read_op_summary(path, device=3)


def test_the_matmul_types_include_the_910b_ones():
    assert {"MatMul", "MatMulV2", "MatMulV3", "BatchMatMul", "BatchMatMulV2", "GroupedMatmul",
            "QuantBatchMatmulV3"} <= GEMM_OP_TYPES


def test_more_shapes_than_the_limit_are_refused_at_the_first_one_past_it(tmp_path):
    rows = [mm(f"{m},64;64,128", f"{m},128") for m in range(1, 7)]
    path = write(tmp_path, rows)
    assert len(read_op_summary(path, max_shapes=6).gemms) == 6
    with pytest.raises(WorkloadFileError) as err:
        read_op_summary(path, max_shapes=5)
    assert err.value.where == "line 7"  # the sixth shape's row, after the header
    assert "max_shapes" in str(err.value)


def test_a_profile_of_many_shapes_costs_linear_time(tmp_path):
    n = 40_000  # the duplicate-name check was quadratic: about a minute here, now under 0.1 s
    gemms = tuple(Gemm(1 + i % 200, 16 + i // 200, 64, "fp16", f"g{i}", 1) for i in range(n))
    started = time.perf_counter()
    Workload(name="many", gemms=gemms, tokens_per_step=1)
    assert time.perf_counter() - started < 5
