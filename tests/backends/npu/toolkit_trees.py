"""Directory trees laid out like installed CANN toolkits of three releases, for tests.

Every path is one a public install tree or Huawei's guides name (docs/NPU.md,
"Checked against"); the files are empty or hold one ``key=value`` line, except
the CMake modules, which stand in for CANN's: ``ascendc.cmake`` defines
``ascendc_library`` as a plain library and the CPU twin's package config defines
its ``tikicpulib::<soc>`` target, so that the generated project configures for
real and the test can read what it would link. Nothing here compiles a kernel.

* 8.0.RC3 (``ascend-toolkit/8.0.RC3`` + ``latest``): ``libunified_dlog.so``,
  ``compiler/tikcpp/ascendc_kernel_cmake``.
* 8.1.RC1 (``ascend-toolkit/8.1.RC1`` + ``latest``): ``libascendalog.so`` only.
* 8.5.0 (``cann-8.5.0`` + ``cann``): ``<arch>-linux/tikcpp/ascendc_kernel_cmake``,
  the ASC package under ``lib64/cmake``, ``libascendalog.so``, ``set_env.sh`` inside.
"""

from __future__ import annotations

from pathlib import Path

from aoe_optuna.backends.npu.toolkit_layout import host_arch

SOC = "Ascend910B3"

ASCENDC_CMAKE = """\
# Stand-in for CANN's ascendc.cmake: the two functions the generated project calls.
message(STATUS "AOE-PROBE ascendc.cmake ${CMAKE_CURRENT_LIST_DIR}")
function(ascendc_library name kind)
    add_library(${name} ${kind} ${ARGN})
endfunction()
function(ascendc_compile_options name scope)
    target_compile_options(${name} ${scope} ${ARGN})
endfunction()
"""
ASC_CONFIG = """\
# Stand-in for CANN's ASC package config: says it was found (it defines no language).
message(STATUS "AOE-PROBE ASC ${CMAKE_CURRENT_LIST_FILE}")
"""
TIKICPULIB_CONFIG = """\
# Stand-in for the CPU twin's package config: its per-SoC target.
message(STATUS "AOE-PROBE tikicpulib ${CMAKE_CURRENT_LIST_DIR}")
if(NOT TARGET tikicpulib::{soc})
    add_library(tikicpulib::{soc} INTERFACE IMPORTED)
endif()
"""


def _touch(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_toolkit(root: Path, version: str, soc: str = SOC, simulator: bool = True,
                 cpu_twin: bool = True, msprof: bool = True) -> Path:
    """A toolkit of ``version`` (8.0.RC3, 8.1.RC1 or 8.5.0) under ``root``; returns its home."""
    arch = host_arch()
    if version.startswith("8.5"):
        versioned = root / f"cann-{version}"
        home = root / "cann"
        _touch(versioned / "set_env.sh", f"export ASCEND_HOME_PATH={home}\n")
        kernel_cmake = versioned / f"{arch}-linux" / "tikcpp" / "ascendc_kernel_cmake"
        _touch(versioned / "lib64" / "cmake" / "asc-config.cmake", ASC_CONFIG)
        _touch(versioned / f"{arch}-linux" / "ccec_compiler" / "bin" / "bisheng").chmod(0o755)
        logs = ("libascendalog.so",)
    else:
        versioned = root / "ascend-toolkit" / version
        home = root / "ascend-toolkit" / "latest"
        _touch(root / "ascend-toolkit" / "set_env.sh", f"export ASCEND_HOME_PATH={home}\n")
        kernel_cmake = versioned / "compiler" / "tikcpp" / "ascendc_kernel_cmake"
        _touch(versioned / "compiler" / "ccec_compiler" / "bin" / "bisheng").chmod(0o755)
        _touch(versioned / "compiler" / "version.info", f"Version={version}\n")
        logs = ("libunified_dlog.so",) if version.startswith("8.0") else ("libascendalog.so",)
    _touch(kernel_cmake / "ascendc.cmake", ASCENDC_CMAKE)
    _touch(versioned / f"{arch}-linux" / "ascend_toolkit_install.info",
           f"package_name=Ascend-cann-toolkit\nversion={version}\narch={arch}\nos=linux\n")
    _touch(versioned / "include" / "acl" / "acl.h", "#pragma once\n")
    for lib in ("libascendcl.so", "libruntime.so", "libtiling_api.so", "libplatform.so",
                "libc_sec.so", "libnnopbase.so", "libprofapi.so", "libmmpa.so",
                "libascend_dump.so", "liberror_manager.so", "libascendc_runtime.a", *logs):
        _touch(versioned / "lib64" / lib)
    if cpu_twin:
        twin = versioned / "tools" / "tikicpulib" / "lib"
        _touch(twin / "cmake" / "tikicpulib-config.cmake", TIKICPULIB_CONFIG.replace("{soc}", soc))
        (twin / soc).mkdir(parents=True, exist_ok=True)
    if simulator:
        for lib in ("libruntime_camodel.so", "libnpu_drv_camodel.so"):
            _touch(versioned / "tools" / "simulator" / soc / "lib" / lib)
    if msprof:
        _touch(versioned / "tools" / "profiler" / "bin" / "msprof").chmod(0o755)
    home.symlink_to(versioned.name)  # latest -> 8.1.RC1, cann -> cann-8.5.0
    return home


LEGACY_DETERMINE = """\
# Stand-in for catlass's CMakeDetermineASCENDCompiler.cmake (v1.5.0): reports what the
# project handed it, then stops (the real module finds bisheng on PATH and goes on).
find_program(AOE_BISHENG NAMES bisheng PATHS "$ENV{PATH}")
message(FATAL_ERROR "AOE-PROBE legacy simulator=${ENABLE_SIMULATOR} "
                    "model=${SIMULATOR_NPU_MODEL} bisheng=${AOE_BISHENG}")
"""


def make_catlass(root: Path, legacy: bool) -> Path:
    """A catlass checkout: legacy (<= v1.5.0, own ASCEND modules) or on find_package(ASC)."""
    _touch(root / "include" / "catlass" / "catlass.hpp", "#pragma once\n")
    if legacy:
        _touch(root / "cmake" / "modules" / "CMakeDetermineASCENDCompiler.cmake",
               LEGACY_DETERMINE)
    return root
