"""Where catlass is, and the project and command lines that build a catlass candidate.

catlass is header-only: a build needs its ``include/`` directory (``backend.catlass``
in a spec, else ``$CATLASS_HOME``) and a CANN toolkit of :data:`CATLASS_MIN_CANN` or
newer (catlass README, "minimum CANN version" table). catlass has built two ways:

* up to v1.5.0, with the checkout's own ASCEND language modules
  (``cmake/modules/CMakeDetermineASCENDCompiler.cmake``; bisheng from PATH), on
  CANN >= 8.2.RC1: template ``catlass_legacy_CMakeLists.txt``;
* since catlass commit 987e9e9f (2026-04-09, "minimum CANN 8.5.0; AscendC CMake
  build system"), with CANN's ASC package (``find_package(ASC REQUIRED)``,
  ``project(... LANGUAGES ASC CXX)``; catlass@0dfcf9df304f297361edab86448ac5ea6aed1647)
  on CANN >= 8.5.0: template ``catlass_CMakeLists.txt``.

:func:`catlass_build_system` tells them apart by the checkout's files and
:func:`toolkit_reason` says, in one line, when the toolkit cannot build the checkout.
Build::

    cmake -S . -B build -DCATLASS_HOME=<catlass> -DCATLASS_ARCH=2201 -DRUN_MODE=<mode>
          -DCMAKE_BUILD_TYPE=Release
    cmake --build build -j <jobs>
    cmake --install build --prefix out

The simple kernel's compile options mean this for the catlass build: ``opt_level``
and ``schedule`` become bisheng flags of the ASC sources, as for the simple kernel;
``unroll_factor`` and ``output_align`` have no catlass counterpart (catlass unrolls
its own loops and writes C with row stride N) and are refused when not at their
defaults, so that two configs never measure the same binary under two names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aoe_optuna.backends.npu.cann import CannToolkit
from aoe_optuna.backends.npu.catlass.args import ArchInfo, CatlassArgs
from aoe_optuna.backends.npu.catlass.render import HEADER_FILE, render_header
from aoe_optuna.backends.npu.compile_flags import kernel_options
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget, ProgramUnavailable
from aoe_optuna.backends.npu.sources import (
    BENCH_COMMON_FILE,
    RTOL,
    SHARED,
    RenderError,
    Templates,
    check_soc,
)
from aoe_optuna.hardware.profile import SocProfile

TEMPLATES = Templates("aoe_optuna.backends.npu.catlass")
ENV_VAR = "CATLASS_HOME"
MARKER = Path("include") / "catlass" / "catlass.hpp"
BENCH_FILE = "catlass_bench.cpp"
BENCH_HEADER = "aoe_catlass_bench.h"
CATLASS_RUN_MODES = ("npu", "sim")
# Simple-kernel knobs with no catlass meaning, and the only value the catlass build takes.
NO_CATLASS_MEANING = {"unroll_factor": 0, "output_align": 1}
CATLASS_MIN_CANN = "8.2.RC1"  # catlass README: every release since v1.0 (8.2.RC1.alpha002)
ASC_MIN_CANN = "8.5.0"  # catlass 987e9e9f: find_package(ASC) needs CANN 8.5.0
LEGACY_MODULE = Path("cmake") / "modules" / "CMakeDetermineASCENDCompiler.cmake"
BUILD_SYSTEMS = {"asc": "catlass_CMakeLists.txt", "legacy": "catlass_legacy_CMakeLists.txt"}
# Variants with vector-core work (padding, the split-K reduce, the quant epilogue) compile
# for the whole AI core ("mix"); the others for the cube only (catlass v1.5.0 examples).
MIX_VARIANTS = ("padding", "splitk", "quant")

NOT_FOUND = ("catlass not found: clone github.com/hicann/catlass and set CATLASS_HOME to it "
             "(or pass backend.catlass)")


class CatlassNotFound(ValueError):
    """No catlass checkout; the message is one line saying what to set."""


def find_catlass(explicit: str | os.PathLike[str] | None = None,
                 env: Mapping[str, str] | None = None) -> Path:
    """The catlass checkout at ``explicit``, else at ``$CATLASS_HOME``."""
    env = os.environ if env is None else env
    if explicit is not None:
        where, named_by = Path(explicit), "backend.catlass"
    elif env.get(ENV_VAR):
        where, named_by = Path(env[ENV_VAR]), f"${ENV_VAR}"
    else:
        raise CatlassNotFound(NOT_FOUND)
    if not (where / MARKER).is_file():
        raise CatlassNotFound(f"catlass not found: {named_by}={where} has no {MARKER}; "
                              "point it at a clone of github.com/hicann/catlass")
    return where


def catlass_revision(home: Path) -> str:
    """The checkout's commit when it is a git clone (the build cache keys on it), else "unknown"."""
    git = home / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            return (git / head[5:]).read_text().strip()
        return head
    except OSError:
        return "unknown"


def catlass_build_system(home: Path) -> str:
    """``"legacy"`` for a checkout with its own ASCEND language modules, else ``"asc"``."""
    return "legacy" if (home / LEGACY_MODULE).is_file() else "asc"


def toolkit_reason(toolkit: CannToolkit, home: Path) -> str | None:
    """Why this toolkit cannot build this catlass checkout (one line), or None."""
    if not toolkit.at_least(CATLASS_MIN_CANN):
        return (f"catlass needs CANN >= {CATLASS_MIN_CANN}; the toolkit at {toolkit.home} is "
                f"{toolkit.version} (kernel: simple runs on it)")
    if catlass_build_system(home) == "asc" and not toolkit.at_least(ASC_MIN_CANN):
        return (f"the catlass checkout {home} builds with find_package(ASC), which needs CANN "
                f">= {ASC_MIN_CANN}; the toolkit is {toolkit.version}: check out catlass v1.5.0 "
                "or install CANN 8.5")
    return None


def compile_option_reason(config: Mapping[str, Any]) -> str | None:
    """Why the catlass build cannot honour the config's simple-kernel options, or None."""
    for name, only in NO_CATLASS_MEANING.items():
        if int(config.get(name, only)) != only:
            return (f"{name}={config[name]}: the catlass kernel has no such knob "
                    f"(it builds as {name}={only})")
    return None


def render_bench_header(args: CatlassArgs, profile: SocProfile, run_mode: str) -> str:
    """What the host program needs besides the instantiation: mode, SoC, layouts, tolerance."""
    if run_mode not in CATLASS_RUN_MODES:
        raise RenderError(f"run_mode {run_mode!r}: the catlass kernel runs in "
                          f"{list(CATLASS_RUN_MODES)}")
    return "\n".join([
        "// Rendered by aoe_optuna/backends/npu/catlass/build.py for catlass_bench.cpp.",
        "#pragma once",
        f'#define AOE_SOC_VERSION "{check_soc(profile)}"',
        f'#define AOE_RUN_MODE "{run_mode}"',
        f'#define AOE_LAYOUT_A "{args.layout_a}"',
        f'#define AOE_LAYOUT_B "{args.layout_b}"',
        f"#define AOE_INPUT_BF16 {int(args.dtype == 'bf16')}",
        f"#define AOE_RTOL {float(RTOL[args.dtype])!r}",
        "",
    ])


class HasArch(Protocol):
    """A rendered catlass instantiation: what its build needs is the arch."""

    @property
    def arch(self) -> ArchInfo: ...


@dataclass(frozen=True)
class CatlassTarget:
    """What one catlass CMake project builds: its project name, the one ASC source, the
    executable, a catlass directory to include besides ``include/`` (relative to the
    checkout) and whether the kernel runs on the whole AI core (cube and vector: "mix")."""

    project: str
    source: str
    executable: str
    extra_include: str = ""
    mix: bool = False


GEMM_TARGET = CatlassTarget("aoe_catlass_gemm", BENCH_FILE, "gemm_bench")


def render_cmake(args: CatlassArgs | None, run_mode: str, options: Sequence[str],
                 build_system: str = "asc", soc: str = "",
                 target: CatlassTarget = GEMM_TARGET, arch: str = "2201") -> str:
    """The CMakeLists of ``target`` (a GEMM's when ``args`` is given, its variant
    deciding cube-only or mix)."""
    template = TEMPLATES.text(BUILD_SYSTEMS[build_system])
    language = "ASC" if build_system == "asc" else "ASCEND"
    # One SHELL: entry keeps flag pairs such as "-mllvm -misched=..." from being de-duplicated.
    flags = (f'"SHELL:$<$<COMPILE_LANGUAGE:{language}>:{" ".join(options)}>"'
             if options else "")
    mix = target.mix if args is None else args.variant in MIX_VARIANTS
    if not target.extra_include:
        template = template.replace("@EXTRA_INCLUDE@ ", "")
    fills = {"@RUN_MODE@": run_mode,
             "@CATLASS_ARCH@": arch if args is None else args.arch.npu_arch,
             "@KERNEL_OPTIONS@": flags, "@PROJECT@": target.project, "@SOURCE@": target.source,
             "@TARGET@": target.executable}
    if target.extra_include:
        fills["@EXTRA_INCLUDE@"] = "${CATLASS_HOME}/" + target.extra_include
    if build_system == "legacy":
        fills["@SOC_VERSION@"] = soc
        fills["@AICORE_ARCH@"] = "dav-c220" if mix else "dav-c220-cube"
    for key, value in fills.items():
        if key not in template:
            raise RenderError(f"catlass CMakeLists template lacks {key}")
        template = template.replace(key, value)
    return template


def render_catlass_project(args: CatlassArgs, config: Mapping[str, Any], profile: SocProfile,
                           run_mode: str, build_system: str = "asc") -> dict[str, str]:
    """File name -> text of the CMake project that builds and times one instantiation."""
    return {
        HEADER_FILE: render_header(args),
        BENCH_HEADER: render_bench_header(args, profile, run_mode),
        BENCH_FILE: TEMPLATES.text(BENCH_FILE),
        BENCH_COMMON_FILE: SHARED.text(BENCH_COMMON_FILE),
        "CMakeLists.txt": render_cmake(args, run_mode, kernel_options(config), build_system,
                                       check_soc(profile)),
    }


def catlass_build_commands(catlass_home: Path, args: CatlassArgs | HasArch, run_mode: str,
                           jobs: int = 4) -> list[list[str]]:
    return [
        ["cmake", "-S", ".", "-B", "build", f"-DCATLASS_HOME={catlass_home}",
         f"-DCATLASS_ARCH={args.arch.npu_arch}", f"-DRUN_MODE={run_mode}",
         "-DCMAKE_BUILD_TYPE=Release"],
        ["cmake", "--build", "build", "-j", str(int(jobs))],
        ["cmake", "--install", "build", "--prefix", "out"],
    ]


def catlass_program(files: dict[str, str], args: HasArch, target_spec: CatlassTarget,
                    problem_args: list[str], target: NpuTarget, what: str,
                    notes: Sequence[str] = ()) -> KernelProgram:
    """A catlass instantiation's build tree (an attention kind's) as a program of the npu
    backend: built against the target's checkout, keyed by its path and commit.
    ProgramUnavailable where it cannot build there: no checkout, a run mode catlass lacks,
    a toolkit too old for the checkout."""
    home = target.catlass
    if home is None:
        raise ProgramUnavailable(NOT_FOUND)
    if target.run_mode not in CATLASS_RUN_MODES:
        raise ProgramUnavailable(f"run_mode={target.run_mode}: catlass kernels run in "
                                 f"{list(CATLASS_RUN_MODES)}")
    if target.toolkit.home.is_dir() and home.is_dir():  # a dry run names placeholders
        why = toolkit_reason(target.toolkit, home)
        if why is not None:
            raise ProgramUnavailable(why)
    toolchain = f"catlass|{home.resolve()}|{target.catlass_revision}"
    return KernelProgram(files, catlass_build_commands(home, args, target.run_mode),
                         f"bin/{target_spec.executable}", problem_args, toolchain, what,
                         CATLASS_RUN_MODES, tuple(notes))
