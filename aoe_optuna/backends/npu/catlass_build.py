"""Where catlass is, and the project and command lines that build a catlass candidate.

catlass is header-only: a build needs its ``include/`` directory (``backend.catlass``
in a spec, else ``$CATLASS_HOME``) and the CANN toolkit whose bisheng compiles the
ASC language (CANN's CMake package ``ASC``; catlass@0dfcf9df304f297361edab86448ac5ea6aed1647
CMakeLists.txt: ``find_package(ASC REQUIRED)``, ``project(... LANGUAGES ASC CXX)``).
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
from pathlib import Path
from typing import Any

from aoe_optuna.backends.npu.catlass_args import CatlassArgs
from aoe_optuna.backends.npu.catlass_render import HEADER_FILE, render_header
from aoe_optuna.backends.npu.render import (
    RTOL,
    RenderError,
    check_soc,
    kernel_options,
    template_text,
)
from aoe_optuna.hardware.profile import SocProfile

ENV_VAR = "CATLASS_HOME"
MARKER = Path("include") / "catlass" / "catlass.hpp"
BENCH_FILE = "catlass_bench.cpp"
BENCH_HEADER = "aoe_catlass_bench.h"
CATLASS_RUN_MODES = ("npu", "sim")
# Simple-kernel knobs with no catlass meaning, and the only value the catlass build takes.
NO_CATLASS_MEANING = {"unroll_factor": 0, "output_align": 1}

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
        "// Rendered by aoe_optuna/backends/npu/catlass_build.py for catlass_bench.cpp.",
        "#pragma once",
        f'#define AOE_SOC_VERSION "{check_soc(profile)}"',
        f'#define AOE_RUN_MODE "{run_mode}"',
        f'#define AOE_LAYOUT_A "{args.layout_a}"',
        f'#define AOE_LAYOUT_B "{args.layout_b}"',
        f"#define AOE_INPUT_BF16 {int(args.dtype == 'bf16')}",
        f"#define AOE_RTOL {float(RTOL[args.dtype])!r}",
        "",
    ])


def render_cmake(args: CatlassArgs, run_mode: str, options: Sequence[str]) -> str:
    template = template_text("catlass_CMakeLists.txt")
    # One SHELL: entry keeps flag pairs such as "-mllvm -misched=..." from being de-duplicated.
    flags = f'"SHELL:$<$<COMPILE_LANGUAGE:ASC>:{" ".join(options)}>"' if options else ""
    fills = {"@RUN_MODE@": run_mode, "@CATLASS_ARCH@": args.arch.npu_arch,
             "@KERNEL_OPTIONS@": flags}
    for key, value in fills.items():
        if key not in template:
            raise RenderError(f"catlass CMakeLists template lacks {key}")
        template = template.replace(key, value)
    return template


def render_catlass_project(args: CatlassArgs, config: Mapping[str, Any], profile: SocProfile,
                           run_mode: str) -> dict[str, str]:
    """File name -> text of the CMake project that builds and times one instantiation."""
    return {
        HEADER_FILE: render_header(args),
        BENCH_HEADER: render_bench_header(args, profile, run_mode),
        BENCH_FILE: template_text(BENCH_FILE),
        "CMakeLists.txt": render_cmake(args, run_mode, kernel_options(config)),
    }


def catlass_build_commands(catlass_home: Path, args: CatlassArgs, run_mode: str,
                           jobs: int = 4) -> list[list[str]]:
    return [
        ["cmake", "-S", ".", "-B", "build", f"-DCATLASS_HOME={catlass_home}",
         f"-DCATLASS_ARCH={args.arch.npu_arch}", f"-DRUN_MODE={run_mode}",
         "-DCMAKE_BUILD_TYPE=Release"],
        ["cmake", "--build", "build", "-j", str(int(jobs))],
        ["cmake", "--install", "build", "--prefix", "out"],
    ]
