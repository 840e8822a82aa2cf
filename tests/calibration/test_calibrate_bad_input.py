"""``aoe-tune calibrate`` on input that used to be misread, hang or end in a traceback:
each case is one line naming the file, row or option, exit 2, nothing printed on stdout
and nothing created; and inputs given twice fit as once. The bad inputs run the
command's ``main`` in this process (``tests/support/in_process.py``: the same exit
status and output); the fits and the read-only folder run it as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.in_process import aoe_tune_here

ROOT = Path(__file__).resolve().parents[2]
TORCH = ROOT / "studies" / "timings" / "torch_npu_910b2.csv"
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")
HEADER = "op,shape,dtype,tiling,time_us"
MSPROF_HEADER = ("Device_id,OP Type,Task Type,Task Duration(us),Input Shapes,Input Data Types,"
                 "Input Formats,Output Shapes,Output Formats")


def _calibrate(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AOE_TUNE, "calibrate", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def _write(path: Path, *lines: str) -> str:
    path.write_text("\n".join(lines) + "\n")
    return path.name


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return path.name


def _folder(path: Path) -> str:
    path.mkdir()
    return path.name


def _msprof_row(m: int, us: str, k: int = 256, n: int = 512) -> str:
    return f'0,MatMulV2,AI_CORE,{us},"{m},{k};{k},{n}",FLOAT16;FLOAT16,ND;ND,"{m},{n}",ND'


def _timings(*argv: str) -> list[str]:
    return ["--soc", "Ascend910B2", *argv]


# name -> (argv made in the folder, what the line says)
CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "decimal comma: a row with more fields than the header": (
        lambda d: _timings("--timings", _write(
            d / "t.csv", HEADER, "gemm,1024x1024x1024,fp16,,21,89",
            "gemm,2048x2048x2048,fp16,,68.45")),
        "t.csv: line 2: expected at most 5 fields, as the header has (a decimal comma?"),
    "five copies of one kernel are one kernel": (
        lambda d: _timings("--timings", _write(
            d / "t.csv", HEADER, *["gemm,1024x1024x1024,fp16,,21.89"] * 5)),
        "expected at least 3 distinct kernels (leave-one-out needs them), got 1 from 5 rows"),
    "a tiling key given twice": (
        lambda d: _timings("--timings", _write(
            d / "t.csv", HEADER, "gemm,128x256x512,fp16,tile_m=128;tile_m=64,10")),
        "t.csv: line 2, column 'tiling': expected each parameter once (tile_m is given "
        "twice)"),
    "a shape out of range": (
        lambda d: _timings("--timings", _write(d / "t.csv", HEADER, "gemm,0x256x512,fp16,,10")),
        "t.csv: line 2, column 'shape': expected MxNxK such as 128x256x1024, each from 1 to "
        "16,777,216, got '0x256x512'"),
    "a tiling value a parameter does not take": (
        lambda d: _timings("--timings", _write(
            d / "t.csv", HEADER, "gemm,128x256x512,fp16,pipeline=x,10")),
        "t.csv: line 2, column 'tiling': expected pipeline: 0/1/2 or one of"),
    "a FIFO as --timings": (
        lambda d: _timings("--timings", _fifo(d / "t.csv")),
        "t.csv: file: expected timings"),
    "a missing SQLite study storage": (
        lambda d: ["--from-study", "sqlite:///missing.db", "S"],
        "--from-study: sqlite:///missing.db does not exist"),
    "a missing Journal study storage": (
        lambda d: ["--from-study", "missing.log", "S"],
        "--from-study: missing.log does not exist"),
    "--out a folder": (
        lambda d: _timings("--timings", str(TORCH), "--out", _folder(d / "out")),
        "--out: out: is a folder"),
    "--out in /proc": (
        lambda d: _timings("--timings", str(TORCH), "--out", "/proc/x"),
        "--out: /proc/x: a file of the kernel's /proc or /sys"),
    "--out /proc/self/fd/1": (
        lambda d: _timings("--timings", str(TORCH), "--out", "/proc/self/fd/1"),
        "--out: /proc/self/fd/1 (a link to"),
    "--out a FIFO": (
        lambda d: _timings("--timings", str(TORCH), "--out", _fifo(d / "out.json")),
        "--out: out.json: a FIFO, not a regular file"),
    "--out is checked before any input is read": (
        lambda d: _timings("--timings", "missing.csv", "--out", "/proc/x"),
        "--out: /proc/x"),
    "--soc a FIFO named .json": (
        lambda d: ["--soc", _fifo(d / "p.json"), "--timings", str(TORCH)],
        "--soc: p.json: expected a profile .json file, got something that is not a regular "
        "file"),
    "--soc a folder named .json": (
        lambda d: ["--soc", _folder(d / "p.json"), "--timings", str(TORCH)],
        "--soc: p.json: expected a profile .json file, got a folder"),
    "--soc a binary file": (
        lambda d: ["--soc", _binary(d / "p.json"), "--timings", str(TORCH)],
        "--soc: p.json: expected a profile as UTF-8 JSON text"),
    "--msprof a row with more fields than the header": (
        lambda d: _timings("--msprof", _write(d / "op_summary.csv", MSPROF_HEADER,
                                              _msprof_row(16, "21,89"))),
        "op_summary.csv: line 2: expected at most 9 fields"),
    "--msprof shapes that all took 0 us": (
        lambda d: _timings("--msprof", _write(d / "op_summary.csv", MSPROF_HEADER,
                                              _msprof_row(16, "0"))),
        "op_summary.csv: shape 16x512x256 fp16, column 'Task Duration(us)': expected a mean "
        "duration above 0"),
}


def _binary(path: Path) -> str:
    path.write_bytes(b'{"soc": "\xff\xfe\x00"}')
    return path.name


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_exit_2_and_creates_nothing(tmp_path: Path, case: str) -> None:
    make, said = CASES[case]
    argv = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    done = aoe_tune_here(["calibrate", *argv], tmp_path)
    err = done.stderr.strip()
    assert done.returncode == 2, (done.stdout, err)
    assert len(err.splitlines()) == 1 and err.startswith("aoe-tune calibrate: error: "), err
    assert said in err, err
    assert "expected expected" not in err and err.count(", got ") <= 1, err
    assert done.stdout == ""  # nothing fitted, nothing printed before the refusal
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no storage, no profile


@pytest.mark.slow  # a real aoe-tune process
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_working_folder_with_the_default_out_is_refused_first(
        tmp_path: Path) -> None:
    tmp_path.chmod(0o555)
    try:
        done = _calibrate(tmp_path, *_timings("--timings", str(TORCH)))
    finally:
        tmp_path.chmod(0o755)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "--out: folder" in done.stderr and "not writable" in done.stderr
    assert list(tmp_path.iterdir()) == []


def _fit_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.slow  # real aoe-tune processes
def test_an_input_given_twice_fits_as_once(tmp_path: Path) -> None:
    # torch_npu's GEMMs on a part 40% slower: an offset clear of their scatter, so written
    lines = TORCH.read_text().splitlines()
    mine = _write(tmp_path / "slower.csv", lines[0], *(
        f"{r.rsplit(',', 1)[0]},{1.4 * float(r.rsplit(',', 1)[1]):.2f}" for r in lines[1:]))
    once = _fit_lines(_calibrate(tmp_path, *_timings("--timings", mine, "--out", "a.json")))
    twice = _fit_lines(_calibrate(tmp_path, *_timings("--timings", mine, "--timings",
                                                      mine, "--out", "b.json")))
    assert once[0] == "5 rows, 5 distinct kernels on Ascend910B2, 1 kernel family"
    assert twice[0] == "10 rows, 5 distinct kernels on Ascend910B2, 1 kernel family"
    # the same scale and the same errors: copies are no held-out evidence
    assert once[1].startswith("  gemm_library") and once[1:5] == twice[1:5]


@pytest.mark.slow  # real aoe-tune processes
def test_an_msprof_profile_given_twice_fits_as_once(tmp_path: Path) -> None:
    # torch_npu's published square GEMMs on a part 40% slower (an offset a scale is kept
    # for), each timed twice as two steps would time it
    rows = []
    for line in TORCH.read_text().splitlines()[1:]:
        size, us = int(line.split(",")[1].split("x")[0]), 1.4 * float(line.split(",")[-1])
        rows += [_msprof_row(size, f"{us * 0.99}", size, size),
                 _msprof_row(size, f"{us * 1.01}", size, size)]
    name = _write(tmp_path / "op_summary.csv", MSPROF_HEADER, *rows)
    once = _fit_lines(_calibrate(tmp_path, *_timings("--msprof", name, "--out", "a.json")))
    twice = _fit_lines(_calibrate(tmp_path, *_timings("--msprof", name, "--msprof", name,
                                                      "--out", "b.json")))
    assert once[0].startswith("5 rows, 5 distinct kernels")  # a profile's row: a shape's mean
    assert twice[0].startswith("10 rows, 5 distinct kernels")
    assert once[1].startswith("  gemm_library") and once[1:5] == twice[1:5]
