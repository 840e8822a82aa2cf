"""What each way of running the npu backend needs, checked against one machine.

``aoe-tune doctor`` prints these findings: the toolkit (where, which version,
found how), the devices ``npu-smi`` reports, and for each run mode (npu, sim,
cpu), the catlass kernel and msprof timing, each file or tool that is there or
missing, with how to get what is missing. Nothing here builds or runs a kernel.

Devices: ``npu-smi info -l`` lists ``NPU ID : <n>`` lines; ``npu-smi info -t board
-i <id> -c 0`` states ``Chip Name : <name>`` (and ``NPU Name`` on Ascend910
chips); the SoC is ``Ascend<Chip Name>``, or ``<Chip Name>_<NPU Name>`` for
``Ascend910`` (catlass cmake/funcs.cmake, ``determine_npu_model``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from aoe_optuna.backends.npu import toolkit_layout as layout
from aoe_optuna.backends.npu.cann import CannNotFound, CannToolkit, find_cann
from aoe_optuna.backends.npu.catlass.build import (
    ASC_MIN_CANN,
    CATLASS_MIN_CANN,
    CatlassNotFound,
    catlass_build_system,
    find_catlass,
    toolkit_reason,
)

MODES = ("npu", "sim", "cpu")
_NPU_ID = re.compile(r"^\s*NPU ID\s*:\s*(\d+)\s*$", re.MULTILINE)
_FIELD = r"^\s*{name}\s*:\s*(\S+)\s*$"


@dataclass(frozen=True)
class Finding:
    """One line of the doctor's report: a topic, whether it is fine, what, and the remedy."""

    topic: str
    ok: bool
    text: str
    remedy: str = ""

    def line(self) -> str:
        mark = "ok     " if self.ok else "MISSING"
        tail = f" -> {self.remedy}" if self.remedy and not self.ok else ""
        return f"{mark} {self.topic:<16} {self.text}{tail}"


Runner = Callable[[list[str]], str | None]


def run_quietly(argv: list[str]) -> str | None:
    """A command's stdout, or None when it is absent or fails (npu-smi without a driver)."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def locate_toolkit(explicit: str | None, env: Mapping[str, str]) -> tuple[CannToolkit | None,
                                                                         Finding]:
    """The toolkit and the finding that says where it is, or what to do without one."""
    try:
        tk = find_cann(explicit, env)
    except CannNotFound as exc:
        scripts = [p for p in (Path(os.path.expanduser(h)) for h in layout.DEFAULT_HOMES)
                   if (p / "set_env.sh").is_file() or (p.parent / "set_env.sh").is_file()]
        hint = (f"source {layout.set_env_script(scripts[0])}" if scripts else
                "install the CANN toolkit (Ascend-cann-toolkit_<version>_linux-<arch>.run) and "
                "source its set_env.sh")
        return None, Finding("toolkit", False, str(exc), hint)
    script = layout.set_env_script(tk.home)
    extra = f"; set_env.sh: {script}" if script else ""
    return tk, Finding("toolkit", True,
                       f"{tk.home} (found by {tk.found_by}), CANN {tk.version}{extra}")


def version_finding(tk: CannToolkit) -> Finding:
    if tk.version == "unknown":
        places = ", ".join(layout.VERSION_FILES)
        return Finding("version", False, f"no version file under {tk.home} ({places})",
                       "reinstall the toolkit package; its install.info states the version")
    return Finding("version", True, f"CANN {tk.version} (read from the toolkit's version files)")


def device_findings(run: Runner = run_quietly) -> list[Finding]:
    """The NPUs ``npu-smi`` lists and their SoC names."""
    listing = run(["npu-smi", "info", "-l"])
    if listing is None:
        return [Finding("devices", False, "npu-smi is not on PATH or fails (no NPU driver)",
                        layout.DRIVER_REMEDY + "; sim and cpu modes need no device")]
    ids = [int(i) for i in _NPU_ID.findall(listing)]
    if not ids:
        return [Finding("devices", False, "npu-smi info -l lists no NPU ID",
                        "check the driver with npu-smi info")]
    socs = {}
    for npu in ids:
        board = run(["npu-smi", "info", "-t", "board", "-i", str(npu), "-c", "0"]) or ""
        socs[npu] = soc_name(board)
    named = ", ".join(f"{i}: {s or 'SoC unknown'}" for i, s in socs.items())
    return [Finding("devices", True, f"{len(ids)} NPU(s) - {named}")]


def soc_name(board: str) -> str | None:
    """The SoC (``Ascend910B3``) from ``npu-smi info -t board`` output, as catlass derives it."""
    chip = re.search(_FIELD.format(name="Chip Name"), board, re.MULTILINE)
    if not chip:
        return None
    if chip.group(1) == "Ascend910":
        npu_name = re.search(_FIELD.format(name="NPU Name"), board, re.MULTILINE)
        return f"Ascend910_{npu_name.group(1)}" if npu_name else "Ascend910"
    name = chip.group(1)
    return name if name.startswith("Ascend") else f"Ascend{name}"


def _probe(topic: str, probe: layout.Probe, home: Path, soc: str) -> Finding:
    found = probe.find(home, soc)
    if found is not None:
        return Finding(topic, True, f"{probe.what}: {found}")
    tried = ", ".join(str(p.relative_to(home)) for p in probe.paths(home, soc))
    return Finding(topic, False, f"{probe.what}: none of {tried}", probe.remedy)


def _tool(topic: str, name: str, remedy: str) -> Finding:
    where = shutil.which(name)
    return (Finding(topic, True, f"{name}: {where}") if where
            else Finding(topic, False, f"{name} is not on PATH", remedy))


def mode_findings(tk: CannToolkit, soc: str, mode: str) -> list[Finding]:
    """What building and running the simple kernel in ``mode`` needs, found or missing."""
    topic = f"mode {mode}"
    out: list[Finding] = []
    if mode == "cpu":
        out += [_probe(topic, layout.CPU_TWIN_CMAKE, tk.home, soc),
                _probe(topic, layout.CPU_TWIN_LIBS, tk.home, soc)]
        twin_soc = tk.home / "tools" / "tikicpulib" / "lib" / soc
        out.append(Finding(topic, twin_soc.is_dir(), f"CPU twin of {soc}: {twin_soc}",
                           f"set hardware.soc to a SoC under {twin_soc.parent}"))
        return out
    out += [_probe(topic, layout.ASCENDC_CMAKE, tk.home, soc),
            _probe(topic, layout.BISHENG, tk.home, soc),
            _probe(topic, layout.ACL_HEADER, tk.home, soc),
            _probe(topic, layout.ACL_LIBRARY, tk.home, soc),
            _probe(topic, layout.LOG_LIBRARY, tk.home, soc)]
    if mode == "sim":
        out += [_probe(topic, layout.SIMULATOR_LIBS, tk.home, soc),
                _probe(topic, layout.SIMULATOR_DRIVER, tk.home, soc)]
    else:
        hal = next((p for p in layout.DRIVER_HAL if Path(p).exists()), None)
        where = hal or "none of " + ", ".join(layout.DRIVER_HAL)
        out.append(Finding(topic, hal is not None, f"NPU driver libascend_hal.so: {where}",
                           layout.DRIVER_REMEDY))
    return out


def host_tool_findings() -> list[Finding]:
    """The host's build tools, which every run mode needs."""
    return [_tool("host tools", "cmake", "install CMake 3.16 or newer (e.g. pip install cmake)"),
            _tool("host tools", "g++", "install the host C++ compiler (g++ 7.3 or newer)")]


def msprof_finding(tk: CannToolkit) -> Finding:
    found = tk.msprof()
    if found is not None:
        return Finding("timing msprof", True, f"msprof: {found}")
    return Finding("timing msprof", False,
                   f"no msprof under {tk.home}/tools/profiler/bin or on PATH",
                   layout.MSPROF.remedy + "; timing: events needs none")


def catlass_findings(tk: CannToolkit, explicit: str | None,
                     env: Mapping[str, str]) -> list[Finding]:
    """Whether ``kernel: catlass`` (and so ``auto``) can build here, and why not."""
    topic = "kernel catlass"
    try:
        home = find_catlass(explicit, env)
    except CatlassNotFound as exc:
        return [Finding(topic, False, str(exc), "git clone https://github.com/hicann/catlass "
                        "and export CATLASS_HOME=<clone> (kernel: auto then takes it)")]
    system = catlass_build_system(home)
    out = [Finding(topic, True, f"checkout {home} builds with "
                   + ("its own ASCEND language modules (CANN >= "
                      f"{CATLASS_MIN_CANN})" if system == "legacy"
                      else f"find_package(ASC) (CANN >= {ASC_MIN_CANN})"))]
    why = toolkit_reason(tk, home)
    if why is not None:
        out.append(Finding(topic, False, why, "kernel: auto falls back to the simple kernel"))
        return out
    if system == "asc":
        out.append(_probe(topic, layout.ASC_PACKAGE, tk.home, ""))
    else:
        out.append(_probe(topic, layout.BISHENG, tk.home, ""))
    missing = [name for name in layout.CATLASS_LIBRARIES if layout.library(tk.home, name) is None]
    out.append(Finding(topic, not missing,
                       "lib64 libraries catlass links: " + ("all present" if not missing
                                                            else "missing " + ", ".join(missing)),
                       layout.TOOLKIT))
    return out
