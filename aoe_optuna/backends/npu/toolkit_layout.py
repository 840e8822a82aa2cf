"""Where the files of a CANN toolkit lie, release by release (8.0 to 8.5).

Files moved between releases, so every lookup names each place a file has
lived and takes the first that exists, as Huawei's own CMake does
(``compiler/tikcpp/ascendc_kernel_cmake`` or ``<arch>-linux/tikcpp/ascendc_kernel_cmake``;
the log library ``libascendalog.so`` or ``libunified_dlog.so``, catlass
``examples/CMakeLists.txt``). The layouts, from public install trees and
Huawei's install guides (docs/NPU.md, "Checked against"):

* 8.0 to 8.3: ``/usr/local/Ascend/ascend-toolkit/latest`` (a link to the
  versioned directory), ``set_env.sh`` one level up, the version in
  ``<arch>-linux/ascend_toolkit_install.info`` and ``compiler/version.info``.
* 8.5: ``/usr/local/Ascend/cann`` (or ``cann-<version>``) with ``set_env.sh``
  inside it, the same ``<arch>-linux/ascend_toolkit_install.info``.
* The CANN 7 place of the kernel CMake support (``tools/tikcpp``) is still probed.

``{arch}`` stands for the host's ``uname -m`` and ``{soc}`` for the SoC
(``Ascend910B3``) in the paths below.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Probe:
    """One thing a build or run needs: the places it may be, and how to get it."""

    what: str
    places: tuple[str, ...]
    remedy: str

    def paths(self, home: Path, soc: str = "", arch: str | None = None) -> list[Path]:
        arch = arch or host_arch()
        return [home / p.format(arch=arch, soc=soc) for p in self.places]

    def find(self, home: Path, soc: str = "", arch: str | None = None) -> Path | None:
        """The first place that exists, or None."""
        return next((p for p in self.paths(home, soc, arch) if p.exists()), None)


def host_arch() -> str:
    """``x86_64`` or ``aarch64``: the ``<arch>-linux`` directory of the toolkit."""
    machine = platform.machine().lower()
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(machine, machine)


TOOLKIT = "install the CANN toolkit package (Ascend-cann-toolkit_<version>_linux-<arch>.run)"

ASCENDC_CMAKE = Probe(
    "Ascend C kernel CMake support (ascendc.cmake)",
    ("compiler/tikcpp/ascendc_kernel_cmake/ascendc.cmake",
     "{arch}-linux/tikcpp/ascendc_kernel_cmake/ascendc.cmake",
     "tools/tikcpp/ascendc_kernel_cmake/ascendc.cmake"),
    TOOLKIT,
)
BISHENG = Probe(
    "bisheng, the Ascend C compiler",
    ("compiler/ccec_compiler/bin/bisheng", "{arch}-linux/ccec_compiler/bin/bisheng"),
    TOOLKIT,
)
ACL_HEADER = Probe("ACL header acl/acl.h", ("include/acl/acl.h", "runtime/include/acl/acl.h"),
                   TOOLKIT)
ACL_LIBRARY = Probe("ACL library libascendcl.so",
                    ("lib64/libascendcl.so", "runtime/lib64/libascendcl.so"), TOOLKIT)
# CANN 8.1.RC1 ships only libascendalog.so; older releases libunified_dlog.so.
LOG_LIBRARY = Probe("log library (libascendalog.so or libunified_dlog.so)",
                    ("lib64/libascendalog.so", "lib64/libunified_dlog.so"), TOOLKIT)
CPU_TWIN_CMAKE = Probe(
    "CPU twin CMake package (tikicpulib-config.cmake)",
    ("tools/tikicpulib/lib/cmake/tikicpulib-config.cmake",
     "tools/cpudebug/cmake/tikicpulib-config.cmake"),
    TOOLKIT + "; the CPU twin is part of it",
)
CPU_TWIN_LIBS = Probe("CPU twin libraries (tools/tikicpulib/lib)", ("tools/tikicpulib/lib",),
                      TOOLKIT)
SIMULATOR_LIBS = Probe(
    "cycle simulator of the SoC (libruntime_camodel.so)",
    ("tools/simulator/{soc}/lib/libruntime_camodel.so",),
    TOOLKIT + " with the simulator of this SoC (tools/simulator/<soc>); set hardware.soc to "
    "one of the SoCs under tools/simulator",
)
SIMULATOR_DRIVER = Probe("simulator driver model (libnpu_drv_camodel.so)",
                         ("tools/simulator/{soc}/lib/libnpu_drv_camodel.so",), TOOLKIT)
MSPROF = Probe("msprof, the operator profiler", ("tools/profiler/bin/msprof",),
               TOOLKIT + " (msprof ships with it)")
# find_package(ASC): the CMake package of the ASC language (CANN 8.5 and later).
ASC_PACKAGE = Probe(
    "ASC language CMake package (find_package(ASC), CANN >= 8.5)",
    ("lib64/cmake/asc-config.cmake", "lib64/cmake/ASCConfig.cmake",
     "{arch}-linux/tikcpp/ascendc_kernel_cmake/asc-config.cmake",
     "{arch}-linux/tikcpp/ascendc_kernel_cmake/ASCConfig.cmake",
     "compiler/tikcpp/ascendc_kernel_cmake/asc-config.cmake",
     "compiler/tikcpp/ascendc_kernel_cmake/ASCConfig.cmake"),
    "install CANN 8.5.0 or later, or use a catlass checkout from before its switch to "
    "find_package(ASC) (catlass v1.4.0)",
)
# The version, first file that states it wins; ``key=value`` lines.
VERSION_FILES = (
    "{arch}-linux/ascend_toolkit_install.info",
    "compiler/version.info",
    "runtime/version.info",
    "version.cfg",
)

# Where a toolkit lies when nothing names it: root installs, then the user's own.
DEFAULT_HOMES = (
    "/usr/local/Ascend/ascend-toolkit/latest",
    "/usr/local/Ascend/cann",
    "~/Ascend/ascend-toolkit/latest",
    "~/Ascend/cann",
)

# catlass links these from lib64 (catlass examples/CMakeLists.txt); .so or .a.
CATLASS_LIBRARIES = ("ascendc_runtime", "runtime", "profapi", "mmpa", "ascend_dump", "c_sec",
                     "error_manager", "ascendcl", "tiling_api", "nnopbase", "platform")
# The NPU driver (npu mode): libascend_hal.so of the driver package.
DRIVER_HAL = ("/usr/local/Ascend/driver/lib64/driver/libascend_hal.so",
              "/usr/local/Ascend/driver/lib64/libascend_hal.so")
DRIVER_REMEDY = ("install the NPU driver and firmware packages "
                 "(Ascend-hdk-910b-npu-driver_<version>_linux-<arch>.run)")


def set_env_script(home: Path) -> Path | None:
    """The ``set_env.sh`` that belongs to the toolkit at ``home``, if it exists."""
    for candidate in (home / "set_env.sh", home.parent / "set_env.sh"):
        if candidate.is_file():
            return candidate
    return None


def library(home: Path, name: str) -> Path | None:
    """``lib64/lib<name>.so`` or ``.a`` of the toolkit, if present."""
    for suffix in (".so", ".a"):
        path = home / "lib64" / f"lib{name}{suffix}"
        if path.exists():
            return path
    return None
