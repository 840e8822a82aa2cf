"""Shape lists (CSV and JSON) become workloads; every malformed row is one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_optuna.hardware.profile import DTYPE_BYTES
from aoe_optuna.workload import dtypes
from aoe_optuna.workload.gemm import Gemm
from aoe_optuna.workload.shape_list import read_shape_list, shape_list_workload

CSV = """# decode GEMMs of one layer, batch 16
name,M,N,K,dtype,count
qkv,16,4608,3584,fp16,28
o,16,3584,3584,float16,28
gate_up,16,37888,3584,FP16,28
down,16,3584,18944,,28
"""


def test_csv_columns_in_any_order_comments_and_defaults(tmp_path: Path):
    path = tmp_path / "layer.csv"
    path.write_text(CSV)
    shapes = read_shape_list(path)
    assert shapes.gemms[0] == Gemm(16, 3584, 4608, "fp16", "qkv", 28)
    assert shapes.gemms[3] == Gemm(16, 18944, 3584, "fp16", "down", 28)  # empty dtype: default
    assert shapes.tokens_per_step is None
    wl = shape_list_workload(shapes, "layer")
    assert wl.tokens_per_step == 1 and wl.fixed_s == 0.0
    latencies = {g.name: 1e-5 for g in wl.gemms}
    assert wl.tokens_per_s(latencies) == pytest.approx(1 / (4 * 28 * 1e-5))
    assert shape_list_workload(shapes, "layer", tokens_per_step=16).tokens_per_s(
        latencies) == pytest.approx(16 / (4 * 28 * 1e-5))


def test_csv_without_names_or_counts(tmp_path: Path):
    path = tmp_path / "s.csv"
    path.write_text("m,k,n\n1,4096,4096\n1,4096,14336\n")
    shapes = read_shape_list(path, default_dtype="bf16")
    assert [g.name for g in shapes.gemms] == ["gemm_1x4096x4096_bf16", "gemm_1x4096x14336_bf16"]
    assert {g.count for g in shapes.gemms} == {1}


def test_json_list_and_object_forms(tmp_path: Path):
    rows = [{"name": "a", "M": 64, "K": 1024, "N": 1024, "dtype": "int8", "count": 3}]
    (tmp_path / "l.json").write_text(json.dumps(rows))
    assert read_shape_list(tmp_path / "l.json").gemms == (Gemm(64, 1024, 1024, "int8", "a", 3),)
    (tmp_path / "o.json").write_text(json.dumps({"gemms": rows, "tokens_per_step": 64,
                                                 "fixed_s": 0.002}))
    shapes = read_shape_list(tmp_path / "o.json")
    wl = shape_list_workload(shapes, "o")
    assert (wl.tokens_per_step, wl.fixed_s) == (64, 0.002)
    assert shape_list_workload(shapes, "o", tokens_per_step=8).tokens_per_step == 8


@pytest.mark.parametrize(("name", "text", "phrase"), [
    ("a.csv", "M,K,N,dtype\n1,2,3,fp8\n", "line 2, column 'dtype': expected fp16, bf16"),
    ("a.csv", "M,K,N\n1,2,x\n", "line 2, column 'N': expected an integer from 1 to"),
    ("a.csv", "M,K,N\n1,0,4\n", "line 2, column 'K': expected an integer from 1"),
    ("a.csv", "M,K\n1,2\n", "line 1: expected a header with the columns M, K, N"),
    ("a.csv", "M,K,N,flops\n1,2,3,4\n", "line 1, column 'flops': expected a header of the"),
    ("a.csv", "M,K,N\n1,2,3,4\n", "line 2: expected 3 cells as in the header, got 4"),
    ("a.csv", "M,K,N\n", "document: expected at least one GEMM row, got only a header"),
    ("a.csv", "# nothing\n", "document: expected a header row and a row per GEMM"),
    ("a.csv", "name,M,K,N\nx,1,2,3\n\nx,4,5,6\n", "line 4, column 'name': expected a name no "
                                                 "other GEMM"),
    ("a.csv", "M,K,N,count\n1,2,3,-1\n", "line 2, column 'count': expected an integer from 1"),
    ("a.json", "[]", "document: expected a non-empty list of GEMMs"),
    ("a.json", '[{"M": 1, "K": 2}]', "key '[0].N': expected an integer from 1"),
    ("a.json", '{"gemms": [{"M": 1, "K": 2, "N": 3, "flops": 1}]}',
     "key 'gemms[0].flops': expected one of the keys name, M, K, N, dtype, count"),
    ("a.json", '{"gemms": [], "tokens": 1}', "key 'tokens': expected one of the keys gemms"),
    ("a.json", '{"gemms": [{"M": 1, "K": 2, "N": 3}], "tokens_per_step": 0}',
     "key 'tokens_per_step': expected an integer from 1"),
    ("a.json", '{"gemms": [{"M": 1, "K": 2, "N": 3}], "fixed_s": -1}',
     "key 'fixed_s': expected a finite time in seconds"),
    ("a.json", '{"gemms": [{"M": 1, "K": 2, "N": 3, "dtype": 16}]}', "key 'gemms[0].dtype'"),
    ("a.json", "{", "line 1: expected valid JSON"),
    ("a.json", '"x"', "document: expected a list of GEMMs or an object"),
])
def test_bad_shape_list_is_one_line_naming_the_place(tmp_path: Path, name, text, phrase):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_shape_list(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: ") and phrase in msg and "\n" not in msg, msg


def test_every_profile_dtype_has_spellings():
    assert {dtypes.dtype_name(n) for n in ("fp16", "DT_BF16", "FLOAT", "int8")} == \
        set(DTYPE_BYTES)
    assert dtypes.dtype_name("FLOAT8_E4M3FN") is None
    assert dtypes.is_known_untuned("DT_INT4") and not dtypes.is_known_untuned("FLOAT17")
