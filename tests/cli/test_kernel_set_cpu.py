"""``aoe-tune kernel-set`` on the cpu backend: real C GEMMs built and timed over M = 1..64,
and the header's dispatch, compiled with gcc, right for every M of the range and the
M just outside it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")
CC = shutil.which("gcc")
HIGH = 64
SPACE = {"tile_m": [16, 64], "tile_n": [16, 64], "tile_k": [64], "pipeline": [0, 1],
         "opt_level": ["O2"]}
DRIVER = r"""
#include <stdio.h>
#include "ks.h"

int main(void) {
    uint32_t m;
    for (m = 1; m <= %d; ++m) {
        int in_range = -1;
        const aoe_ks_kernel_t *e = aoe_ks_dispatch("Ascend910B2", "GemmKernel", "fp32", 64, 64,
                                                   m, &in_range);
        if (e == NULL) return 1;
        printf("%%u %%d %%d %%d %%d\n", m, in_range, e->tile_m, e->tile_n, e->pipeline);
    }
    return aoe_ks_dispatch("Ascend910B2", "GemmKernel", "fp32", 64, 65, 1, NULL) != NULL;
}
"""

pytestmark = [pytest.mark.slow,  # real builds and timings in an aoe-tune process
              pytest.mark.skipif(CC is None, reason="needs gcc")]


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AOE_TUNE, "kernel-set", "--storage", "sqlite:///ks.db",
                           "--study-name", "ks", "--no-progress", *args], cwd=folder,
                          capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "TMPDIR": str(folder)})


def test_a_cpu_kernel_set_dispatches_every_m_to_its_range(tmp_path: Path) -> None:
    rows = "\n".join(f"m{m},{m},64,64,fp32,{max(1, round(HIGH / m))}"
                     for m in range(1, HIGH + 1))
    (tmp_path / "mix.csv").write_text(f"name,M,K,N,dtype,count\n{rows}\n")
    (tmp_path / "cpu.json").write_text(json.dumps({
        "op_name": "GemmKernel", "search_space": SPACE, "hardware": {"soc": "Ascend910B2"},
        "optimization_objective": "throughput", "workload": {"shapes": "mix.csv"},
        "backend": {"name": "cpu", "max_seconds": 0.02}}))
    measured = _run(tmp_path, "--config", "cpu.json", "--n-trials", "14", "--k", "1",
                    "--tuning-shapes", "6")
    assert measured.returncode == 0, measured.stderr
    # the most kernels the real timings make worth shipping, measuring nothing more
    for k in ("3", "2", "1"):
        run = _run(tmp_path, "--k", k, "--kb", "kb.json", "--header", "ks.h")
        if run.returncode == 0:
            break
        assert run.returncode == 2 and f"--k {k}: no operator has" in run.stderr, run.stderr
        assert not (tmp_path / "kb.json").exists() and not (tmp_path / "ks.h").exists()
    assert run.returncode == 0, run.stderr
    assert "measurements: 14 " in run.stdout, run.stdout
    entries = json.loads((tmp_path / "kb.json").read_text())["entries"]
    ranges = sorted((e["m_range"], e["config"]) for e in entries)
    assert ranges[0][0][0] == 1 and ranges[-1][0][1] == HIGH
    assert all(a[0][1] + 1 == b[0][0] for a, b in zip(ranges, ranges[1:], strict=False))
    (tmp_path / "driver.c").write_text(DRIVER % (HIGH + 1))
    subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "driver.c",
                    "-o", "driver"], cwd=tmp_path, check=True, capture_output=True, timeout=60)
    out = subprocess.run([str(tmp_path / "driver")], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    lines = [tuple(map(int, out[i:i + 5])) for i in range(0, len(out), 5)]
    assert [line[0] for line in lines] == list(range(1, HIGH + 2))
    for m, inside, tile_m, tile_n, pipeline in lines:
        span, config = next(((s, c) for s, c in ranges if s[0] <= m <= s[1]), ranges[-1])
        assert inside == int(m <= HIGH), m
        assert (tile_m, tile_n, pipeline) == (config["tile_m"], config["tile_n"],
                                              config["pipeline"]), m
