"""Wall time of ``aoe-tune calibrate`` on a large timings file.

Writes ``--rows`` rows over ``--shapes`` GEMM shapes, each row a kernel of its own
(a tiling of the library space drawn without repeats per shape) unless ``--copies``
times each kernel several times, timed as a chip 8% slower than the model with a
2 us launch and 5% log-normal noise, so the fit has something to find; then runs
``aoe-tune calibrate`` on it in a process of its own and prints the command, its
first output line and its wall time:

    nice .venv/bin/python scripts/calibration_scale.py --rows 200000 --shapes 1000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from aoe_optuna.backends.simulator.backend import AscendSimulator
from aoe_optuna.calibration.residuals import library_space
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.gemm import Gemm

SOC = "Ascend910B2"


def write_rows(path: Path, rows: int, shapes: int, copies: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    space = library_space(SOC, "fp16")
    feasible = space.all_feasible()
    sim = AscendSimulator(load_profile(SOC))
    kernels = rows // copies
    per_shape = -(-kernels // shapes)
    with path.open("w") as f:
        f.write("op,shape,dtype,tiling,time_us\n")
        written = 0
        for _ in range(shapes):
            m, n, k = (int(rng.integers(1, 8193)), int(rng.choice([1024, 2048, 4096, 5120])),
                       int(rng.choice([1024, 3584, 4096])))
            picked = feasible[rng.choice(len(feasible), per_shape, replace=False)]
            model_us = sim.latency(space.columns(picked), Gemm(m, k, n)) * 1e6
            for row, us in zip(picked, model_us, strict=True):
                config = space.config(row)
                tiling = ";".join(f"{name}={value}" for name, value in config.items())
                for _ in range(copies):
                    if written == rows:
                        return
                    measured = (1.08 * us + 2.0) * float(np.exp(rng.normal(0, 0.05)))
                    f.write(f"gemm,{m}x{n}x{k},fp16,{tiling},{measured:.3f}\n")
                    written += 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--shapes", type=int, default=1_000)
    p.add_argument("--copies", type=int, default=1, help="timings of each kernel")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = Path(folder) / "timings.csv"
        write_rows(rows, args.rows, args.shapes, args.copies, args.seed)
        megabytes = rows.stat().st_size / 1e6
        command = [str(Path(sys.executable).parent / "aoe-tune"), "calibrate", "--soc", SOC,
                   "--timings", str(rows), "--out", str(Path(folder) / "chip.json")]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - started
    print(f"$ aoe-tune calibrate --soc {SOC} --timings timings.csv --out chip.json  "
          f"# {args.rows:,} rows, {megabytes:.1f} MB")
    print(done.stdout.strip() or done.stderr.strip())
    print(f"exit {done.returncode}, wall {wall:.1f} s")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
