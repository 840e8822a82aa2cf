"""An msprof profile is read a row at a time: memory does not grow with the file, the
shape cap stops the read where it is passed, and a broken CSV is one line."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_optuna.workload import read_progress
from aoe_optuna.workload.files import WorkloadFileError
from aoe_optuna.workload.msprof import read_op_summary

from .conftest import PROFILES_DIR
from .test_msprof import HEADER, mm, vec, write

SAMPLE = PROFILES_DIR / "op_summary_qwen25_7b_decode_b1_910b2.csv"
PEAK = """
import resource, sys
from aoe_optuna.workload.msprof import read_op_summary
if sys.argv[1] != "-":
    assert len(read_op_summary(sys.argv[1], steps=int(sys.argv[2])).gemms) == 5
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _peak_mib(*args: str) -> float:
    out = subprocess.run([sys.executable, "-c", PEAK, *args], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    return int(out) / 1024


@pytest.mark.slow  # writes and reads a 12 MB profile in a fresh process
def test_reading_a_large_profile_costs_no_memory_of_its_size(tmp_path: Path) -> None:
    with SAMPLE.open(newline="") as f:
        header, *rows = list(csv.reader(f))
    path, steps = tmp_path / "op_summary_0_1.csv", 200  # 63 kB a step: 12.6 MB
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        for _ in range(steps):
            writer.writerows(rows)
    assert path.stat().st_size > 12e6
    grown = _peak_mib(str(path), str(steps)) - _peak_mib("-", "0")
    assert grown < 20, f"reading took {grown:.0f} MiB more than importing"  # was ~170 MiB


def test_the_shape_cap_stops_the_read_before_the_rest_of_the_file(tmp_path: Path) -> None:
    """The seventh line passes max_shapes=5; a broken byte 100 kB further on is never
    reached (loading the whole file first reported that byte instead)."""
    header = [h for h in HEADER if h != "Device_id"]
    rows = [mm(f"{m},64;64,128", f"{m},128")[1:] for m in range(1, 9)]
    path = write(tmp_path, rows + [vec(1.0)[1:]] * 2000, header)
    assert path.stat().st_size > 100_000
    with path.open("ab") as f:
        f.write(b"MatMulV2,AI_CORE,1.0,\xff\xfe\n")
    with pytest.raises(WorkloadFileError) as err:
        read_op_summary(path, max_shapes=5)
    assert err.value.where == "line 7" and "max_shapes" in str(err.value)
    with pytest.raises(WorkloadFileError, match="file: expected UTF-8 text"):
        read_op_summary(path)  # without the cap, the read does reach it


def test_blank_lines_are_no_rows_and_a_broken_csv_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, [mm("1,8;8,8", "1,8"), [], vec(2.0), []])
    step = read_op_summary(path)
    assert step.profiled_us == (10.0,) and step.other_us == 2.0
    huge = mm("1,8;8,8", "1,8")
    huge[1] = "x" * (csv.field_size_limit() + 1)
    path = write(tmp_path, [mm("1,8;8,8", "1,8"), huge])
    with pytest.raises(WorkloadFileError) as err:
        read_op_summary(path)
    assert str(err.value).startswith(f"{path}: line 3: expected CSV text, got field larger")


def test_a_long_read_says_how_far_it_got(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(read_progress, "PROGRESS_EVERY_S", 0.0)
    path = write(tmp_path, [mm("1,8;8,8", "1,8")] * 2048)
    read_op_summary(path)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"{path}: read 1,023 rows (") and "% of the file), 1 GEMM" \
        in lines[0], lines
    assert lines[-1].startswith(f"{path}: read 2,047 rows (100% of the file)"), lines
