"""The one path every layer kernel of this project takes from a rendered tiling to a build
tree: its kernel, its ACL host program, the config header the two agree through, the
host programs' shared headers (``aoe_bench_common.h``, ``aoe_host_numbers.h``,
``templates/aoe_layer_bench.h``) and the CMake project of the project's own Ascend C
kernels (:mod:`aoe_optuna.backends.npu.ascendc_cmake`), built with the GEMM's commands.

Each kernel's module (:mod:`.vector_kernel`, :mod:`.moe_gating_kernel`) says what it
refuses, the literals of its declarations and its own config defines; a
:class:`LayerKernel` does the rest into a :class:`~..kernel_program.KernelProgram`. The
host programs use ACL, so they run on the device and the simulator (``npu``, ``sim``);
the CPU twin (``cpu``) has no ACL and no host program of theirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aoe_optuna.backends.npu.ascendc_cmake import CMAKE_FILE, render_cmake
from aoe_optuna.backends.npu.commands import build_commands
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget, ProgramUnavailable
from aoe_optuna.backends.npu.sources import (
    BENCH_COMMON_FILE,
    HOST_NUMBERS_FILE,
    RTOL,
    SHARED,
    Templates,
    check_soc,
    render_kernel,
)
from aoe_optuna.hardware.profile import SocProfile

TEMPLATES = Templates("aoe_optuna.backends.npu.layer_kernels")
LAYER_BENCH_FILE = "aoe_layer_bench.h"  # the layer host programs' arguments, check, result
ACL_RUN_MODES = ("npu", "sim")  # where an ACL host program runs
ALIGN_ELEMENTS = 16  # one 32-byte DataCopy burst of fp16/bf16
# The host checks' absolute floor beside RTOL (one unit in the output's last place): for
# rope's cancellation (x cos - x' sin near zero) and the gating's tiny weights.
ATOL = {"fp16": 2.0**-14, "bf16": 2.0**-11}


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


@dataclass(frozen=True)
class LayerKernel:
    """One layer kernel's files: ``templates/<name>.cpp`` (the kernel), ``templates/
    <bench>.cpp`` (its host program, built as ``bin/<bench>``), the config header they
    agree through, and the module that renders them (named in that header)."""

    name: str
    bench: str
    config: str
    renderer: str

    def source(self, values: Mapping[str, str]) -> str:
        """The kernel with ``values`` (declaration -> literal) written into it."""
        return render_kernel(TEMPLATES.text(f"{self.name}.cpp"), values)

    def program(self, values: Mapping[str, str], defines: Mapping[str, str], dtype: str,
                rows: int, profile: SocProfile, target: NpuTarget, what: str) -> KernelProgram:
        """The build tree of the kernel with ``values`` and its host program for ``rows``
        rows; ``defines`` are the kernel's own entries of the config header, between the
        SoC and run mode and the element type and tolerances every program reads."""
        header = config_header(self.config, self.renderer, {
            "AOE_SOC_VERSION": f'"{profile.soc}"',
            "AOE_RUN_MODE": f'"{target.run_mode}"',
            **defines,
            "AOE_INPUT_BF16": str(int(dtype == "bf16")),
            "AOE_RTOL": repr(RTOL[dtype]),
            "AOE_ATOL": repr(ATOL[dtype]),
        })
        kernel = self.source(values)
        check_run_mode(target, what)
        soc = check_soc(profile)
        bench_source = f"{self.bench}.cpp"
        files = {
            f"{self.name}.cpp": kernel,
            bench_source: TEMPLATES.text(bench_source),
            BENCH_COMMON_FILE: SHARED.text(BENCH_COMMON_FILE),
            HOST_NUMBERS_FILE: SHARED.text(HOST_NUMBERS_FILE),
            LAYER_BENCH_FILE: TEMPLATES.text(LAYER_BENCH_FILE),
            self.config: header,
            CMAKE_FILE: render_cmake(soc, target.run_mode, (), (), self.name, self.bench,
                                     bench_source),
        }
        return KernelProgram(files, build_commands(target.toolkit, soc, target.run_mode),
                             f"bin/{self.bench}", [str(int(rows))], self.name, what,
                             ACL_RUN_MODES)
