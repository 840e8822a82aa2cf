"""Peak memory of reading a large msprof op_summary CSV as a workload.

Writes a profile of about ``--mb`` MB (the shipped Qwen2.5-7B decode step, repeated as
steps on two devices), then reads it with ``read_op_summary`` in a fresh process and
prints that process's peak RSS next to the peak of a process that only imports the
reader, so the difference is what reading the file costs:

    nice .venv/bin/python scripts/msprof_memory.py --mb 50
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "studies" / "profiles" / "op_summary_qwen25_7b_decode_b1_910b2.csv"
READ = """
import resource, sys, time
import aoe_optuna
from aoe_optuna.workload.msprof import read_op_summary
started = time.perf_counter()
if sys.argv[1] != "-":
    step = read_op_summary(sys.argv[1], steps=int(sys.argv[2]))
    assert len(step.gemms) == 5, step.gemms  # the decode step's five GEMM shapes
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter() - started,
      aoe_optuna.__file__)
"""


def write_profile(path: Path, megabytes: float) -> int:
    """A profile of at least ``megabytes`` MB; returns its steps per device."""
    with SAMPLE.open(newline="") as f:
        header, *rows = list(csv.reader(f))
    device = header.index("Device_id")
    steps = 0
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        while out.tell() < megabytes * 1e6:
            for dev in ("0", "1"):
                writer.writerows([*r[:device], dev, *r[device + 1:]] for r in rows)
            steps += 1
    return steps


def peak_kib(args: list[str], folder: str) -> tuple[int, float]:
    """Peak RSS (KiB) and read time of a fresh process of this interpreter; it runs in
    ``folder``, so the aoe_optuna it imports is the one installed, not this checkout."""
    done = subprocess.run([sys.executable, "-c", READ, *args], capture_output=True, text=True,
                          check=True, cwd=folder)
    kib, seconds, package = done.stdout.split()
    print(f"read by {Path(package).parent}", file=sys.stderr)
    return int(kib), float(seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=50.0, help="size of the profile to read")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "op_summary_0_1.csv"
        steps = write_profile(path, args.mb)
        size = path.stat().st_size
        base, _ = peak_kib(["-", "0"], tmp)
        peak, seconds = peak_kib([str(path), str(steps)], tmp)
    print(f"profile {size / 1e6:.1f} MB, {steps} steps x 2 devices: peak RSS {peak / 1024:.0f} MiB "
          f"reading it, {base / 1024:.0f} MiB importing the reader only "
          f"(+{(peak - base) / 1024:.0f} MiB); read in {seconds:.1f} s")


if __name__ == "__main__":
    main()
