"""Render the Ascend C MoE gating kernel (softmax + top-k per token) with a tuned tiling.

One template (``templates/moe_gating_kernel.cpp``, this project's own); a render
writes the tuned ``tile_rows``, ``col_tile``, ``cores`` and ``double_buffer`` into its
declarations, with the problem's experts, k and element type. Values are ints and
names from fixed tables, never text from a spec. :func:`gating_program` puts the
kernel into a build tree with its host program (``templates/gating_bench.cpp``), which
the npu backend builds, times and checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget, ProgramUnavailable
from aoe_optuna.backends.npu.layer_kernels.program import ALIGN_ELEMENTS, LayerKernel
from aoe_optuna.backends.npu.layer_kernels.tiling_point import feasible_point
from aoe_optuna.backends.npu.sources import INPUT_TYPES, RenderError
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.workload.moe_gating import MoeGating, gating_space

# templates/moe_gating_kernel.cpp, its host program templates/gating_bench.cpp
GATING = LayerKernel("moe_gating_kernel", "gating_bench", "aoe_gating_config.h",
                     "moe_gating_kernel.py")


def problem_reason(p: MoeGating) -> str | None:
    """Why the gating kernel cannot run ``p`` whatever the tiling (a dtype it does not
    implement, an expert count it cannot copy in whole bursts); None where it can."""
    if p.dtype not in INPUT_TYPES:
        return f"dtype {p.dtype}: the gating kernel implements {sorted(INPUT_TYPES)} only"
    if p.experts % ALIGN_ELEMENTS:
        return (f"{p.label}: {p.experts} experts is not a multiple of {ALIGN_ELEMENTS} "
                "(whole 32-byte copies)")
    return None


def gating_values(p: MoeGating, config: Mapping[str, Any],
                  profile: SocProfile) -> dict[str, str]:
    """Declaration -> literal for ``p`` under ``config``; RenderError (one line) when the
    config is not a feasible point of the space or the kernel cannot run the problem."""
    why = problem_reason(p)
    if why is not None:
        raise RenderError(why)
    cfg = feasible_point(gating_space(profile, p), config, p.label)
    return {
        "TILE_ROWS": str(cfg["tile_rows"]),
        "COL_TILE": str(cfg["col_tile"]),
        "CORES": str(cfg["cores"]),
        "BUFFER_NUM": "2" if cfg["double_buffer"] else "1",
        "EXPERTS": str(int(p.experts)),
        "TOP_K": str(int(p.top_k)),
        "InputT": INPUT_TYPES[p.dtype],
    }


def render_gating_kernel(p: MoeGating, config: Mapping[str, Any], profile: SocProfile) -> str:
    """The kernel source for ``p`` with ``config`` written into its declarations."""
    return GATING.source(gating_values(p, config, profile))


def gating_program(p: MoeGating, config: Mapping[str, Any], profile: SocProfile,
                   target: NpuTarget) -> KernelProgram:
    """The build tree that times ``p`` under ``config`` and checks it against a host
    reference; ProgramUnavailable where no tiling runs (:func:`problem_reason`, a run
    mode without ACL), RenderError for a config outside the space."""
    why = problem_reason(p)
    if why is not None:
        raise ProgramUnavailable(why)
    values = gating_values(p, config, profile)
    return GATING.program(values, {
        "AOE_EXPERTS": f"{values['EXPERTS']}u",
        "AOE_TOP_K": f"{values['TOP_K']}u",
        "AOE_CORES": f"{values['CORES']}u",
    }, p.dtype, p.rows, profile, target,
        "Ascend C MoE gating kernel (templates/moe_gating_kernel.cpp)")
