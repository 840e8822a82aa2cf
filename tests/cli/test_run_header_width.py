"""The run's first lines (study, storage, space, sampler, backend) fit 80 columns, as the
summary's do: an ``aoe-tune`` process whose output is not a terminal breaks them between
whole items at $COLUMNS."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.mark.slow  # an aoe-tune process: a short simulated run
def test_the_run_header_breaks_between_items_at_80_columns(tmp_path: Path) -> None:
    spec = ROOT / "studies" / "gemm_4096_910b2.toml"
    proc = subprocess.run(
        [str(BIN / "aoe-tune"), "--config", str(spec), "--storage", "sqlite:///aoe.db",
         "--n-trials", "2", "--sampler", "random", "--seed", "3", "--no-progress"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    head = proc.stderr.split("\nrace", 1)[0].splitlines()
    assert len(head) >= 2 and max(map(len, head)) <= 80, head
    assert head[1].startswith("  ")  # a continuation, indented
    joined = " ".join(line.strip() for line in head)
    assert joined.startswith("study GemmKernel-Ascend910B2-gemm4096x4096x4096 in "
                             "sqlite:///aoe.db: 49,152 configs, 11,980 feasible; "
                             "sampler random, seed 3; backend simulator"), joined
    wide = subprocess.run(
        [str(BIN / "aoe-tune"), "--storage", "sqlite:///aoe.db", "--study-name",
         "GemmKernel-Ascend910B2-gemm4096x4096x4096", "--n-trials", "3", "--no-progress"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "COLUMNS": "200"})
    assert wide.returncode == 0, wide.stderr
    assert wide.stderr.splitlines()[0].endswith("backend simulator"), wide.stderr
