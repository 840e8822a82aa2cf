"""The build tree of one of this project's own Ascend C layer kernels (the vector kernels,
the MoE gating) with its ACL host program: the GEMM's CMake project
(``templates/CMakeLists.txt``, the kernel through ``ascendc_library``) around another
kernel file and host program, and the GEMM's build commands.

Each kernel's module (:mod:`.vector_kernel`, :mod:`.moe_gating_kernel`) renders its
kernel, its host program's config header and its command line; this module puts them
into a :class:`~.kernel_program.KernelProgram`. The host programs use ACL, so they
run on the device and the simulator (``npu``, ``sim``); the CPU twin (``cpu``) has no
ACL and no host program of theirs.
"""

from __future__ import annotations

from collections.abc import Mapping

from aoe_optuna.backends.npu.ascendc_cmake import CMAKE_FILE, render_cmake
from aoe_optuna.backends.npu.commands import build_commands
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget, ProgramUnavailable
from aoe_optuna.backends.npu.sources import (
    BENCH_COMMON_FILE,
    HOST_NUMBERS_FILE,
    SHARED,
    Templates,
    check_soc,
)
from aoe_optuna.hardware.profile import SocProfile

TEMPLATES = Templates("aoe_optuna.backends.npu.layer_kernels")
ACL_RUN_MODES = ("npu", "sim")  # where an ACL host program runs


def check_run_mode(target: NpuTarget, what: str) -> None:
    """ProgramUnavailable (one line) where the host program cannot run in the target's mode."""
    if target.run_mode not in ACL_RUN_MODES:
        raise ProgramUnavailable(f"run_mode={target.run_mode}: the {what} host program uses "
                                 f"ACL, which runs in {list(ACL_RUN_MODES)} only")


def config_header(name: str, source: str, defines: Mapping[str, str]) -> str:
    """A host program's config header: ``#define`` per entry (values already literals)."""
    lines = [f"// {name}: rendered by aoe_optuna/backends/npu/layer_kernels/{source}; the "
             "kernel's twin", "// of these values is in its own file.", "#pragma once"]
    lines += [f"#define {key} {value}" for key, value in defines.items()]
    return "\n".join(lines) + "\n"


def ascendc_program(kernel_name: str, kernel_text: str, bench: str, header_name: str,
                    header_text: str, problem_args: list[str], profile: SocProfile,
                    target: NpuTarget, what: str) -> KernelProgram:
    """The tree: ``<kernel_name>.cpp``, ``<bench>.cpp`` (a template), the shared headers,
    the config header and the CMakeLists; built as the GEMM's is."""
    check_run_mode(target, what)
    soc = check_soc(profile)
    bench_source = f"{bench}.cpp"
    files = {
        f"{kernel_name}.cpp": kernel_text,
        bench_source: TEMPLATES.text(bench_source),
        BENCH_COMMON_FILE: SHARED.text(BENCH_COMMON_FILE),
        HOST_NUMBERS_FILE: SHARED.text(HOST_NUMBERS_FILE),
        header_name: header_text,
        CMAKE_FILE: render_cmake(soc, target.run_mode, (), (), kernel_name, bench,
                                 bench_source),
    }
    return KernelProgram(files, build_commands(target.toolkit, soc, target.run_mode),
                         f"bin/{bench}", problem_args, kernel_name, what, ACL_RUN_MODES)

