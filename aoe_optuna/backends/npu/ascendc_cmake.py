"""The CMake project of this project's own Ascend C kernels: ``templates/CMakeLists.txt``
around one kernel file and its host program, for the simple GEMM
(:mod:`.simple_gemm.render`) and the layer kernels (:mod:`.layer_kernels.program`).

The kernel becomes a library through the toolkit's Ascend C CMake support, or the CPU
twin's for ``cpu``; the toolkit path never enters the file (a CMake command-line
argument, :mod:`.commands`)."""

from __future__ import annotations

from collections.abc import Sequence

from aoe_optuna.backends.npu.sources import SHARED, RenderError

CMAKE_FILE = "CMakeLists.txt"


def render_cmake(soc: str, run_mode: str, options: Sequence[str], cpu_options: Sequence[str],
                 kernel_name: str, bench: str, bench_source: str) -> str:
    """``templates/CMakeLists.txt`` for one kernel file (``<kernel_name>.cpp``) and the host
    program ``bench`` built from ``bench_source``, with the kernel compiler's ``options``
    (and the host compiler's ``cpu_options`` for the CPU twin)."""
    template = SHARED.text(CMAKE_FILE)
    fills = {
        "@RUN_MODE@": run_mode,
        "@SOC_VERSION@": soc,
        "@KERNEL_NAME@": kernel_name,
        "@BENCH@": bench,
        "@BENCH_SOURCE@": bench_source,
        "@KERNEL_OPTIONS@": " ".join(options),
        "@CPU_KERNEL_OPTIONS@": " ".join(cpu_options),
    }
    for key, value in fills.items():
        if key not in template:
            raise RenderError(f"CMakeLists template lacks {key}")
        template = template.replace(key, value)
    return template
