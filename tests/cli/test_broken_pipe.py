"""A reader that leaves early (`aoe-tune describe SPEC | head -1`) ends the command quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"


@pytest.mark.slow
def test_a_closed_pipe_is_no_traceback() -> None:
    # `true` exits at once, long before describe's first line: every line meets a closed pipe
    run = subprocess.run(
        ["bash", "-c", f"'{AOE_TUNE}' describe studies/qwen25_7b_decode_910b2.json | true;"
         " echo \"exit ${PIPESTATUS[0]}\""],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.stdout.splitlines() == ["exit 141"]
    assert "Traceback" not in run.stderr and "BrokenPipeError" not in run.stderr, run.stderr
