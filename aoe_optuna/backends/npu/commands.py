"""The command lines and environments of one npu-backend candidate, for each run mode.

Build (any mode)::

    cmake -S . -B build -DRUN_MODE=<mode> -DSOC_VERSION=<soc> -DASCEND_CANN_PACKAGE_PATH=<cann>
    cmake --build build -j <jobs>
    cmake --install build --prefix out

Run::

    out/bin/gemm_bench M K N warmup launches min_samples max_samples rel_precision max_seconds
    msprof op --application="<the line above>" --warm-up=W --launch-count=N --output=DIR  (npu)
    msprof op simulator --application="<the line above>" --output=DIR                    (sim)

Run modes follow the CANN kernel-launch samples: ``npu`` the device, ``sim`` the
cycle model (its stub runtime from ``tools/simulator/<soc>/lib`` first on
LD_LIBRARY_PATH), ``cpu`` the CPU twin (functional; its timing means nothing).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aoe_optuna.backends.npu.cann import CannToolkit
from aoe_optuna.workload.models import Gemm

ARTIFACT = "out"  # the installed tree: out/bin/gemm_bench, out/lib/lib<kernel>_<mode>.so
BENCH = Path("bin") / "gemm_bench"


@dataclass(frozen=True)
class TimingArgs:
    """How the host program times: ``launches`` per event pair, samples until precise."""

    warmup: int = 5
    launches: int = 10
    min_samples: int = 5
    max_samples: int = 50
    rel_precision: float = 0.02
    max_seconds: float = 2.0


def build_commands(toolkit: CannToolkit, soc: str, run_mode: str, jobs: int = 4) -> list[list[str]]:
    return [
        ["cmake", "-S", ".", "-B", "build", f"-DRUN_MODE={run_mode}", f"-DSOC_VERSION={soc}",
         f"-DASCEND_CANN_PACKAGE_PATH={toolkit.home}", "-DCMAKE_BUILD_TYPE=Release"],
        ["cmake", "--build", "build", "-j", str(int(jobs))],
        ["cmake", "--install", "build", "--prefix", ARTIFACT],
    ]


def bench_command(artifact: Path, gemm: Gemm, timing: TimingArgs) -> list[str]:
    return [
        str(artifact / BENCH), str(gemm.M), str(gemm.K), str(gemm.N), str(int(timing.warmup)),
        str(int(timing.launches)), str(int(timing.min_samples)), str(int(timing.max_samples)),
        repr(float(timing.rel_precision)), repr(float(timing.max_seconds)),
    ]


def msprof_command(msprof: Path, bench: list[str], output_dir: Path, run_mode: str,
                   warmup: int, launches: int) -> list[str]:
    """``msprof op`` around the host program (npu), or ``msprof op simulator`` (sim)."""
    app = f"--application={shlex.join(bench)}"
    if run_mode == "sim":
        return [str(msprof), "op", "simulator", app, f"--output={output_dir}"]
    if run_mode != "npu":
        raise ValueError(f"timing: msprof profiles run modes npu and sim, not {run_mode!r}")
    return [str(msprof), "op", app, f"--warm-up={int(warmup)}", f"--launch-count={int(launches)}",
            f"--output={output_dir}"]


def build_env(toolkit: CannToolkit, base: Mapping[str, str]) -> dict[str, str]:
    env = dict(base)
    env["ASCEND_HOME_PATH"] = str(toolkit.home)
    env["ASCEND_TOOLKIT_HOME"] = str(toolkit.home)
    return env


def run_env(toolkit: CannToolkit, soc: str, run_mode: str, device: int, artifact: Path,
            base: Mapping[str, str]) -> dict[str, str]:
    """One visible device per worker; the simulator's runtime first when simulating."""
    env = build_env(toolkit, base)
    paths = [str(artifact / "lib"), str(toolkit.lib_dir)]
    if run_mode == "sim":
        paths.insert(0, str(toolkit.simulator_lib_dir(soc)))
    if env.get("LD_LIBRARY_PATH"):
        paths.append(env["LD_LIBRARY_PATH"])
    env["LD_LIBRARY_PATH"] = ":".join(paths)
    env["ASCEND_RT_VISIBLE_DEVICES"] = str(int(device))
    return env
