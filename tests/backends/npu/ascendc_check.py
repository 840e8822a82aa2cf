"""Compile rendered Ascend C kernels with the host compiler against the Ascend C headers.

The Ascend C API headers (hicann/asc-devkit) and the CPU-debug framework headers
(hicann/asc-tools) are open source; in CPU-debug mode (``ASCENDC_CPU_DEBUG``) they are
plain C++ and a host compiler type-checks a kernel against them, as the toolkit's CPU
twin does before it links tikicpulib. They are not part of this repository: the
developer names checkouts of both in ``ASCENDC_DEVKIT`` and ``ASCENDC_TOOLS``, and
``kernel_tiling/kernel_tiling.h`` is generated from the devkit by its own script into a
scratch directory, as its CMake does into the build tree. What the toolkit adds and is
not open source, the declarations of the AI core's intrinsics (``stub_fun.h``) and
libboundscheck's ``securec.h``, comes from ``ascendc_decls/`` (this project's own
declarations).

``skip_unless_compilable`` skips a test module that cannot compile (no g++, or the
variables unset), and the ``trees`` fixture of this folder's conftest.py generates
kernel_tiling.h once per session for every module that compiles.

Variants of the kernel are compiled together, each in its own namespace and under a
``#line`` naming the variant, so that the headers (most of the time of one compile)
are parsed once per group, and an error names the variant it is in.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

DECLS = Path(__file__).resolve().parent / "ascendc_decls"
DEVKIT_ENV = "ASCENDC_DEVKIT"  # an asc-devkit checkout
TOOLS_ENV = "ASCENDC_TOOLS"  # an asc-tools checkout
# The target of the simple kernel: Atlas A2 (Ascend 910B, dav-c220, NPU arch 2201).
DEFINES = ("-DASCENDC_CPU_DEBUG=1", "-D__CCE_KT_TEST__=1", "-D__CCE_AICORE__=220",
           "-D__DAV_C220__", "-D__NPU_ARCH__=2201")
STD = "-std=c++17"
# Include directories, relative to the asc-devkit and asc-tools trees, as their CMake
# targets asc_kernel_headers, asc_host_headers and asc_tools_headers list them.
DEVKIT_DIRS = (".", "include", "include/basic_api", "include/utils", "impl", "impl/basic_api")
TOOLS_DIRS = ("cpudebug/include", "cpudebug/utils", "cpudebug/utils/include",
              "cpudebug/utils/include/utils")
# The devkit's generator of kernel_tiling.h and its input, as impl/adv_api/
# gen_kernel_tiling.cmake runs it: SCRIPT TILING_DATA_DEF_DIR OUTPUT.
TILING_SCRIPT = "impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py"
TILING_DEFS = "include/adv_api"
TILING_HEADER = "kernel_tiling/kernel_tiling.h"
# What each tree must hold for a compile (the rest is found, or not, by the compiler).
DEVKIT_NEEDS = ("include/kernel_operator.h", TILING_SCRIPT)
TOOLS_NEEDS = ("cpudebug/include/tikicpulib.h",)
UNTYPED_MARK = "aoe_untyped::"  # the inline namespace of stub_fun.h's untyped intrinsics
KERNEL_INCLUDE = '#include "kernel_operator.h"'


class HeadersUnavailable(Exception):
    """The variables do not name usable trees; the message is one line for a skip."""


def source_trees(environ: Mapping[str, str] = os.environ) -> tuple[Path, Path]:
    """The asc-devkit and asc-tools trees that ``ASCENDC_DEVKIT``/``ASCENDC_TOOLS`` name.

    Raises HeadersUnavailable naming both variables and the first thing missing.
    """
    usage = (f"set {DEVKIT_ENV} to an asc-devkit checkout and {TOOLS_ENV} to an "
             "asc-tools checkout (docs/NPU.md, \"Compile check\")")
    unset = [name for name in (DEVKIT_ENV, TOOLS_ENV) if not environ.get(name)]
    if unset:
        raise HeadersUnavailable(f"Ascend C headers: {' and '.join(unset)} unset; {usage}")
    trees = []
    for name, needs in ((DEVKIT_ENV, DEVKIT_NEEDS), (TOOLS_ENV, TOOLS_NEEDS)):
        tree = Path(environ[name]).expanduser().resolve()
        for need in needs:
            if not (tree / need).is_file():
                raise HeadersUnavailable(f"Ascend C headers: {name}={tree} has no {need}; "
                                         f"{usage}")
        trees.append(tree)
    return trees[0], trees[1]


def skip_unless_compilable() -> tuple[Path, Path]:
    """Skip the calling test module, saying why, unless g++ and both trees are there;
    returns the trees (asc-devkit, asc-tools)."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: the Ascend C compile check needs a host C++ "
                    "compiler", allow_module_level=True)
    try:
        return source_trees()
    except HeadersUnavailable as unavailable:
        pytest.skip(str(unavailable), allow_module_level=True)


def generate_kernel_tiling(devkit: Path, into: Path) -> Path:
    """Write ``into/kernel_tiling/kernel_tiling.h`` with the devkit's own generator (the
    header the devkit's build makes from its tiling data definitions); returns ``into``."""
    proc = subprocess.run([sys.executable, str(devkit / TILING_SCRIPT), str(devkit / TILING_DEFS),
                           str(into / TILING_HEADER)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0 or not (into / TILING_HEADER).is_file():
        raise RuntimeError(f"{devkit / TILING_SCRIPT} did not write {TILING_HEADER} "
                           f"(exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return into


@dataclass(frozen=True)
class HeaderTrees:
    """The asc-devkit and asc-tools checkouts, and where kernel_tiling.h was generated."""

    devkit: Path
    tools: Path
    generated: Path  # holds kernel_tiling/kernel_tiling.h

    def include_flags(self) -> list[str]:
        dirs = [DECLS, self.generated]
        dirs += [self.devkit / d for d in DEVKIT_DIRS]
        dirs += [self.tools / d for d in TOOLS_DIRS]
        return [f"-I{d}" for d in dirs]


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    output: str
    untyped: tuple[str, ...] = ()  # untyped intrinsics the object references


def grouped_kernels(kernels: Mapping[str, str], entries: Sequence[str] = ("gemm_kernel",),
                    file_name: str = "gemm_kernel.cpp") -> str:
    """One translation unit holding each rendered kernel in namespace ``variant_<name>``.

    Each kernel's entry points become ``<entry>_<name>`` (an ``extern "C"`` name is
    one name whatever its namespace) and its file-scope macros are reset first.
    """
    parts = [KERNEL_INCLUDE]
    for name, text in kernels.items():
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ValueError(f"variant name {name!r}: expected a C++ identifier")
        if text.count(KERNEL_INCLUDE) != 1:
            raise ValueError(f"variant {name}: expected one {KERNEL_INCLUDE}")
        body = text.replace(KERNEL_INCLUDE, "// " + KERNEL_INCLUDE)
        for entry in entries:
            body = re.sub(rf"\b{entry}\b(?=\s*\()", f"{entry}_{name}", body)
        parts += ["#undef UNROLL_FACTOR", "#undef AOE_UNROLL", f"namespace variant_{name} {{",
                  f'#line 1 "{file_name}[{name}]"', body, f"}}  // namespace variant_{name}"]
    return "\n".join(parts) + "\n"


def compile_object(source: Path, trees: HeaderTrees, extra: Sequence[str] = (),
                   compiler: str = "g++", timeout_s: float = 300) -> CompileResult:
    """Compile ``source`` to an object (no link) and list the untyped intrinsics it uses."""
    obj = source.with_suffix(".o")
    cmd = [compiler, *DEFINES, STD, "-c", "-o", str(obj), *trees.include_flags(),
           f"-I{source.parent}", *extra, str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        return CompileResult(False, proc.stdout + proc.stderr)
    return CompileResult(True, proc.stderr, untyped_references(obj))


def untyped_references(obj: Path) -> tuple[str, ...]:
    """The undefined symbols of ``obj`` that are stub_fun.h's untyped declarations."""
    nm = shutil.which("nm")
    if nm is None:
        raise RuntimeError("nm (binutils) is needed to read the object's symbols")
    out = subprocess.run([nm, "-u", "-C", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    return tuple(sorted({line.split(" U ", 1)[-1].strip() for line in out.splitlines()
                         if UNTYPED_MARK in line}))


def compile_all(jobs: Mapping[str, tuple[Path, Sequence[str]]], trees: HeaderTrees,
                workers: int = 2) -> dict[str, CompileResult]:
    """Compile several sources side by side: name -> (source, extra flags)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {name: pool.submit(compile_object, src, trees, extra)
                   for name, (src, extra) in jobs.items()}
        return {name: f.result() for name, f in futures.items()}
