"""The command lines and environments of one npu-backend candidate, for each run mode.

Build (any mode)::

    cmake -S . -B build -DRUN_MODE=<mode> -DSOC_VERSION=<soc> -DASCEND_CANN_PACKAGE_PATH=<cann>
    cmake --build build -j <jobs>
    cmake --install build --prefix out

Run::

    out/bin/gemm_bench M K N warmup launches min_samples max_samples rel_precision \
        max_seconds device
    msprof op --output=DIR --launch-skip-before-match=W --launch-count=L <the line above>   (npu)
    msprof op simulator --soc-version=<soc> --output=DIR <the line above>                   (sim)

Run modes follow the CANN kernel-launch samples' ``run.sh``: ``npu`` the device,
``sim`` the cycle model (``tools/simulator/<soc>/lib`` first on LD_LIBRARY_PATH,
and its runtime and driver models preloaded as catlass's examples/CMakeLists.txt
prints), ``cpu`` the CPU twin (``tools/tikicpulib/lib``, ``tools/tikicpulib/lib/<soc>``
and the simulator's libraries; functional, its timing means nothing).

The device is passed to the program, never as ``ASCEND_RT_VISIBLE_DEVICES``:
msprof does not support that variable, so it is removed from the environment
and a worker's visible-device list (``--devices``) is turned into the physical id.
The simulator runs on device 0 (msprof's simulator needs card 0).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aoe_optuna.backends.npu import toolkit_layout as layout
from aoe_optuna.backends.npu.cann import CannToolkit
from aoe_optuna.workload.gemm import Gemm

ARTIFACT = "out"  # the installed tree: out/bin/gemm_bench, out/lib/lib<kernel>_<mode>.so
BENCH = Path("bin") / "gemm_bench"
VISIBLE_DEVICES = "ASCEND_RT_VISIBLE_DEVICES"
MSPROF_MAX_LAUNCHES = 100  # msprof op profiles at most this many launches per run
DRIVER_LIB_DIRS = ("/usr/local/Ascend/driver/lib64/driver", "/usr/local/Ascend/driver/lib64/common")
SIMULATOR_PRELOAD = ("libruntime_camodel.so", "libnpu_drv_camodel.so")


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


def physical_device(device: int, run_mode: str, base: Mapping[str, str]) -> int:
    """The id ``aclrtSetDevice`` takes: entry ``device`` of a visible-device list if the
    environment has one, else ``device``; 0 for the simulator."""
    if run_mode == "sim":
        return 0
    visible = [v.strip() for v in base.get(VISIBLE_DEVICES, "").split(",") if v.strip()]
    if visible:
        if device >= len(visible):
            raise ValueError(f"device: expected an index below {len(visible)} into "
                             f"{VISIBLE_DEVICES}={base[VISIBLE_DEVICES]}, got {device}")
        if not visible[device].isdigit():
            raise ValueError(f"device: {VISIBLE_DEVICES}={base[VISIBLE_DEVICES]} holds "
                             f"{visible[device]!r}, expected device ids")
        return int(visible[device])
    return int(device)


def bench_command(artifact: Path, gemm: Gemm, timing: TimingArgs, device: int = 0) -> list[str]:
    return [
        str(artifact / BENCH), str(gemm.M), str(gemm.K), str(gemm.N), str(int(timing.warmup)),
        str(int(timing.launches)), str(int(timing.min_samples)), str(int(timing.max_samples)),
        repr(float(timing.rel_precision)), repr(float(timing.max_seconds)), str(int(device)),
    ]


def msprof_launches(timing: TimingArgs) -> int:
    """How many launches msprof profiles: the first warm-up batch's, after the fixed warm-up."""
    return max(1, min(int(timing.launches), MSPROF_MAX_LAUNCHES))


def msprof_command(msprof: Path, bench: list[str], output_dir: Path, run_mode: str, soc: str,
                   timing: TimingArgs) -> list[str]:
    """``msprof op`` around the host program (npu), or ``msprof op simulator`` (sim).

    The program goes last with its arguments (``msprof op [options] app [args]``, the
    form the msProf docs recommend over ``--application``). On the device msprof skips
    the ``warmup`` launches and profiles the next :func:`msprof_launches` (the first
    warm-up batch), so its durations and the program's event samples come from one run.
    """
    if run_mode == "sim":
        return [str(msprof), "op", "simulator", f"--soc-version={soc}", f"--output={output_dir}",
                *bench]
    if run_mode != "npu":
        raise ValueError(f"timing: msprof profiles run modes npu and sim, not {run_mode!r}")
    return [str(msprof), "op", f"--output={output_dir}",
            f"--launch-skip-before-match={int(timing.warmup)}",
            f"--launch-count={msprof_launches(timing)}", *bench]


def build_env(toolkit: CannToolkit, base: Mapping[str, str]) -> dict[str, str]:
    """The toolkit named as set_env.sh names it, and bisheng on PATH (catlass's legacy
    build finds its compiler there)."""
    env = dict(base)
    env["ASCEND_HOME_PATH"] = str(toolkit.home)
    env["ASCEND_TOOLKIT_HOME"] = str(toolkit.home)
    bisheng = layout.BISHENG.find(toolkit.home)
    if bisheng is not None:
        env["PATH"] = os.pathsep.join([str(bisheng.parent)] + ([env["PATH"]]
                                                               if env.get("PATH") else []))
    return env


def library_dirs(toolkit: CannToolkit, soc: str, run_mode: str, artifact: Path,
                 keep_missing: bool = False) -> list[str]:
    """LD_LIBRARY_PATH entries of a run, most specific first (those that exist, unless
    ``keep_missing``: a dry run without a toolkit shows them all)."""
    paths: list[Path] = []
    if run_mode == "sim":
        paths.append(toolkit.simulator_lib_dir(soc))
    elif run_mode == "cpu":
        paths.extend(toolkit.cpu_twin_lib_dirs(soc))
    paths += [artifact / "lib", toolkit.lib_dir, toolkit.home / "runtime" / "lib64"]
    if run_mode == "npu":
        paths += [Path(d) for d in DRIVER_LIB_DIRS]
    return [str(p) for p in paths if keep_missing or p == artifact / "lib" or p.is_dir()]


def run_env(toolkit: CannToolkit, soc: str, run_mode: str, artifact: Path,
            base: Mapping[str, str], under_msprof: bool = False,
            keep_missing: bool = False) -> dict[str, str]:
    """The environment of a run: the mode's libraries, no visible-device list; in sim mode
    without msprof, the simulator's runtime and driver models preloaded."""
    env = build_env(toolkit, base)
    env.pop(VISIBLE_DEVICES, None)
    paths = library_dirs(toolkit, soc, run_mode, artifact, keep_missing)
    if env.get("LD_LIBRARY_PATH"):
        paths.append(env["LD_LIBRARY_PATH"])
    env["LD_LIBRARY_PATH"] = ":".join(paths)
    if run_mode == "sim" and not under_msprof:
        preload = [toolkit.simulator_lib_dir(soc) / name for name in SIMULATOR_PRELOAD]
        present = [str(p) for p in preload if keep_missing or p.is_file()]
        if present:
            env["LD_PRELOAD"] = ":".join(present + ([env["LD_PRELOAD"]]
                                                    if env.get("LD_PRELOAD") else []))
    return env
