"""Reading calibration rows and grouping them into distinct kernels: what a row says is
read as written or refused naming the row; a kernel timed more than once is one kernel;
the caps name the row that passes them; a long read says how far it got."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_optuna.calibration.input_caps import MAX_SHAPES, SHAPES_WHY
from aoe_optuna.calibration.kernels import KernelTable
from aoe_optuna.calibration.timings import read_msprof_timings, read_timings
from aoe_optuna.workload import read_progress
from aoe_optuna.workload.files import WorkloadFileError

HEADER = "op,shape,dtype,tiling,time_us"


def _csv(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def test_empty_fields_past_the_header_are_no_data_but_a_value_there_is_refused(
        tmp_path: Path) -> None:
    rows = list(read_timings(_csv(tmp_path, "gemm,128x256x512,fp16,,21.89,,")))
    assert [r.time_us for r in rows] == [21.89]
    with pytest.raises(WorkloadFileError, match=r"line 3: expected at most 5 fields.*got 6"):
        list(read_timings(_csv(tmp_path, "gemm,128x256x512,fp16,,21.89",
                               "gemm,128x256x512,fp16,,21,89")))


@pytest.mark.parametrize(("tiling", "said"), [
    ("tile_m=128;tile_m=64", "expected each parameter once (tile_m is given twice)"),
    ("tile_m=128,tile_n=64;tile_m=128", "(tile_m is given twice)"),
    ("tile_m=x", "expected tile_m: integers, got 'x'"),
    ("layout_a=diagonal", "expected layout_a: one of"),
])
def test_a_bad_tiling_is_one_plain_line(tmp_path: Path, tiling: str, said: str) -> None:
    with pytest.raises(WorkloadFileError) as err:
        list(read_timings(_csv(tmp_path, f'gemm,128x256x512,fp16,"{tiling}",10')))
    text = str(err.value)
    assert said in text and "line 2, column 'tiling'" in text, text
    assert text.count("expected") == 1 and text.count(", got") == 1, text


def test_an_empty_tiling_object_is_the_library_kernel_as_an_empty_cell(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    row = {"op": "gemm", "shape": "128x256x512", "dtype": "fp16", "time_us": 20.0}
    path.write_text(json.dumps([{**row, "tiling": {}}, {**row, "tiling": ""}, row]))
    assert [r.tiling for r in read_timings(path)] == [None, None, None]


def test_a_kernel_timed_more_than_once_is_one_kernel_at_its_median(tmp_path: Path) -> None:
    path = _csv(tmp_path,
                "gemm,128x256x512,fp16,tile_m=128;tile_n=256,10",
                "matmul,128x256x512,fp16,tile_n=256;tile_m=128,30",  # same kernel, reordered
                "gemm,128x256x512,fp16,tile_m=128;tile_n=256;pipeline=double_buffer,11",
                "gemm,128x256x512,fp16,,40",  # the library's kernel: another one
                "gemm,128x256x512,bf16,tile_m=128;tile_n=256,50")  # another dtype
    table = KernelTable()
    table.add_all(read_timings(path))
    assert table.rows == 5 and len(table) == 3
    first = table.kernels[0]
    # pipeline=double_buffer is the default: the third row times the first kernel too
    assert first.times_us == [10.0, 30.0, 11.0] and first.figure_us == 11.0
    assert first.first.where == f"{path}: line 2"
    assert [k.figure_us for k in table.kernels[1:]] == [40.0, 50.0]


def test_the_row_and_shape_caps_name_the_row_that_passes_them(tmp_path: Path) -> None:
    rows = [f"gemm,{m}x256x512,fp16,,{m}" for m in (16, 32, 16, 64)]
    table = KernelTable(max_rows=10, max_shapes=2)
    with pytest.raises(WorkloadFileError) as err:
        table.add_all(read_timings(_csv(tmp_path, *rows)))
    assert str(err.value) == (f"{tmp_path / 't.csv'}: line 5: expected at most 2 distinct GEMM "
                              "shapes (each is simulated; a model's GEMMs are tens), got shape 3")
    table = KernelTable(max_rows=3, max_shapes=10)
    with pytest.raises(WorkloadFileError, match=r"t.csv: line 5: expected at most 3 rows from all "
                       r"inputs together .*got row 4"):
        table.add_all(read_timings(_csv(tmp_path, *rows)))


def test_a_long_read_says_how_far_it_got(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(read_progress, "PROGRESS_EVERY_S", 0.0)
    path = _csv(tmp_path, *[f"gemm,{i % 7 + 1}x256x512,fp16,,{i + 1}" for i in range(2048)])
    table = KernelTable()
    table.add_all(read_timings(path, table.__len__))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"{path}: read 1,023 rows (") and lines[0].endswith(
        "% of the file), 7 distinct kernels so far"), lines
    assert len(lines) == 2 and table.rows == 2048


def test_msprof_shapes_whose_tasks_took_no_time_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "op_summary.csv"
    path.write_text("OP Type,Task Duration(us),Input Shapes,Input Data Types,Output Shapes\n"
                    'MatMulV2,0,"16,256;256,512",FLOAT16;FLOAT16,"16,512"\n')
    with pytest.raises(WorkloadFileError, match=r"shape 16x512x256 fp16, column 'Task "
                       r"Duration\(us\)': expected a mean duration above 0"):
        list(read_msprof_timings(path))


def test_an_msprof_profile_stops_at_the_line_past_the_calibrations_shape_cap(
        tmp_path: Path) -> None:
    path = tmp_path / "op_summary.csv"
    rows = [f'MatMulV2,1.5,"{m},256;256,512",FLOAT16;FLOAT16,"{m},512"'
            for m in range(1, MAX_SHAPES + 2)]
    path.write_text("OP Type,Task Duration(us),Input Shapes,Input Data Types,Output Shapes\n"
                    + "\n".join(rows) + "\n")
    with pytest.raises(WorkloadFileError) as err:
        list(read_msprof_timings(path))
    assert str(err.value) == (f"{path}: line {MAX_SHAPES + 2}: expected at most "
                              f"{MAX_SHAPES:,} distinct GEMM shapes ({SHAPES_WHY}), got shape "
                              f"{MAX_SHAPES + 1:,}")
