"""The cpu backend's compiler as real ``aoe-tune`` processes meet it: none on the host is
one line before anything is written; one that builds nothing ends the run in a line
that says so and exit 4, not a summary of failures and exit 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from aoe_optuna.cli.main import NOTHING_MEASURED
from aoe_optuna.study.run.objective import is_measured
from tests.study.run.cpu_study import BASELINE, SPACE

ROOT = Path(__file__).resolve().parents[2]
CPU_GEMM = str(ROOT / "studies" / "cpu_gemm.json")
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")

pytestmark = pytest.mark.slow  # real aoe-tune processes and real builds


def aoe_tune(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "CC"}
    return subprocess.run([AOE_TUNE, *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**environment, "TMPDIR": str(cwd), **env})


def small_spec(folder: Path) -> Path:
    """64x64x64 fp32 GEMMs with a baseline, timed for at most 0.05 s each."""
    path = folder / "small-cpu.json"
    path.write_text(json.dumps({
        "op_name": "GemmKernel", "search_space": SPACE, "baseline": BASELINE,
        "optimization_objective": "throughput", "hardware": {"soc": "Ascend910B2"},
        "workload": {"gemm": {"M": 64, "K": 64, "N": 64, "dtype": "fp32"}},
        "backend": {"name": "cpu", "max_seconds": 0.05}}))
    return path


def builds_nothing(folder: Path) -> Path:
    """A compiler that answers --version and fails every build, the same way each time."""
    path = folder / "bin" / "broken-cc"
    path.parent.mkdir()
    path.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "broken-cc 1.0"; exit 0; '
                    'fi\necho "broken-cc: error: this compiler builds nothing" >&2\nexit 1\n')
    path.chmod(0o755)
    return path


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


def test_a_compiler_that_builds_nothing_ends_in_one_line_and_exit_4(tmp_path: Path) -> None:
    spec, broken = small_spec(tmp_path), str(builds_nothing(tmp_path))
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    run = aoe_tune(tmp_path, "--config", str(spec), "--storage", url, "--n-trials", "3",
                   "--builders", "1", "--kb", "kb.json", "--sampler", "random",
                   "--no-progress", CC=broken)
    assert run.returncode == NOTHING_MEASURED, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("aoe-tune: error: nothing could be measured: all 3 measurements "
                           "failed, the baseline's included, the same way: build: gemm "
                           "64x64x64: build failed (exit 1): broken-cc: error: this compiler "
                           "builds nothing"), last
    assert last.endswith("; nothing to export")
    assert "builds saved by the cache 0," in run.stdout  # a build that failed saved nothing
    assert "aoe-tune export" not in run.stdout  # no next step that cannot work
    assert not (tmp_path / "kb.json").exists()

    operators = aoe_tune(tmp_path, "operators", "--config", str(spec), "--storage", url,
                         "--n-trials", "4", "--sampler", "random", "--no-progress", CC=broken)
    assert operators.returncode == NOTHING_MEASURED, operators.stderr
    assert operators.stderr.strip().splitlines()[-1].startswith(
        "aoe-tune operators: error: nothing could be measured: all 4 measurements failed "
        "the same way: build: gemm 64x64x64: build failed (exit 1)")


def test_a_resumed_study_meets_a_missing_or_broken_compiler(tmp_path: Path) -> None:
    """Without its compiler a resume is refused before it measures; with one that builds
    nothing, the study's earlier result stays the export's and the run says what failed."""
    spec, broken = small_spec(tmp_path), str(builds_nothing(tmp_path))
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    resume = ["--storage", url, "--study-name", "s", "--sampler", "random", "--no-progress"]
    first = aoe_tune(tmp_path, "--config", str(spec), *resume, "--n-trials", "2")
    assert first.returncode == 0 and "warning" not in first.stderr, first.stderr

    refused = aoe_tune(tmp_path, *resume, "--n-trials", "4", PATH="/nonexistent")
    err = refused.stderr.strip()
    assert refused.returncode == 2 and len(err.splitlines()) == 1, err
    assert "key 'backend.compiler': expected a C compiler on PATH, got 'cc'" in err
    trials = optuna.load_study(study_name="s", storage=url).get_trials()
    assert sum(map(is_measured, trials)) == 2

    failing = aoe_tune(tmp_path, *resume, "--n-trials", "4", "--kb", "kb.json", CC=broken)
    assert failing.returncode == 0, failing.stderr
    assert failing.stderr.strip().splitlines()[-1].startswith(
        "aoe-tune: warning: all 2 measurements of this run failed the same way: build: ")
    assert (tmp_path / "kb.json").exists()
