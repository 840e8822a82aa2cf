"""The cpu backend's compiler as real ``aoe-tune`` processes meet it: none on the host is
one line before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPU_GEMM = str(ROOT / "studies" / "cpu_gemm.json")
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")

pytestmark = pytest.mark.slow  # real aoe-tune processes and real builds


def aoe_tune(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "CC"}
    return subprocess.run([AOE_TUNE, *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**environment, "TMPDIR": str(cwd), **env})


@pytest.mark.parametrize("command", [[], ["operators"]], ids=["tune", "operators"])
@pytest.mark.parametrize("env, origin", [
    ({"PATH": "/nonexistent"}, "got 'cc' (the default: neither backend.compiler nor CC is set)"),
    ({"CC": "/nonexistent/cc"}, "got '/nonexistent/cc' (from CC; backend.compiler is not set)"),
], ids=["no-cc-on-path", "cc-names-none"])
def test_no_compiler_is_one_line_before_anything_is_written(
        tmp_path: Path, command: list[str], env: dict[str, str], origin: str) -> None:
    run = aoe_tune(tmp_path, *command, "--config", CPU_GEMM, "--n-trials", "3",
                   "--builders", "1", **env)
    err = run.stderr.strip()
    assert run.returncode == 2 and len(err.splitlines()) == 1, err
    assert f"{CPU_GEMM}: key 'backend.compiler': expected a C compiler on PATH, {origin}" in err
    assert "install gcc, or name a compiler in CC or backend.compiler" in err
    assert list(tmp_path.iterdir()) == []  # no storage, no build folder, no lease
