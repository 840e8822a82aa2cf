"""Render the Ascend C vector kernel (RMSNorm, add + RMSNorm, SwiGLU, rope) with a tuned tiling.

One template (``templates/vector_kernel.cpp``, this project's own) holds the four
kernels; a render writes the tuned ``tile_len``, ``cores``, ``double_buffer`` and
(add + RMSNorm) ``fused`` into its declarations, with the problem's kind, row width,
head dim, the element type and the profile's UB size. Values are ints and names from
fixed tables, never text from a spec. :func:`vector_program` puts the kernel into a
build tree with its host program (``templates/vector_bench.cpp``), which the npu
backend builds, times and checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget, ProgramUnavailable
from aoe_optuna.backends.npu.layer_kernels.program import ALIGN_ELEMENTS, LayerKernel
from aoe_optuna.backends.npu.layer_kernels.tiling_point import feasible_point
from aoe_optuna.backends.npu.sources import INPUT_TYPES, RenderError
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.workload.vector_ops import VectorOp
from aoe_optuna.workload.vector_space import vector_space

# templates/vector_kernel.cpp, its host program templates/vector_bench.cpp
VECTOR = LayerKernel("vector_kernel", "vector_bench", "aoe_vector_config.h", "vector_kernel.py")
KIND_CODES = {"rmsnorm": 0, "add_rmsnorm": 1, "swiglu": 2, "rope": 3}


def problem_reason(op: VectorOp) -> str | None:
    """Why the kernel cannot run ``op`` whatever the tiling (its kind, dtype or row
    width), or None."""
    if op.kind not in KIND_CODES:
        return (f"vector kernel {op.kind!r}: the Ascend C kernel implements "
                f"{sorted(KIND_CODES)}")
    if op.dtype not in INPUT_TYPES:
        return f"dtype {op.dtype}: the vector kernel implements {sorted(INPUT_TYPES)} only"
    if op.width % ALIGN_ELEMENTS:
        return (f"{op.label}: width {op.width} is not a multiple of "
                f"{ALIGN_ELEMENTS} elements (whole 32-byte copies)")
    if op.kind == "rope" and (op.width % op.head_dim or op.head_dim % (2 * ALIGN_ELEMENTS)):
        return (f"{op.label}: rope needs whole heads of a multiple of "
                f"{2 * ALIGN_ELEMENTS} (head_dim {op.head_dim})")
    return None


def vector_values(op: VectorOp, config: Mapping[str, Any],
                  profile: SocProfile) -> dict[str, str]:
    """Declaration -> literal for ``op`` under ``config``; RenderError (one line) when the
    kernel cannot run the op (:func:`problem_reason`) or the config is not a feasible
    point of the op's space (its rules are the kernel's: every feasible tiling renders)."""
    why = problem_reason(op)
    if why is not None:
        raise RenderError(why)
    cfg = feasible_point(vector_space(profile, op), config, op.label)
    return {
        "TILE_LEN": str(cfg["tile_len"]),
        "CORES": str(cfg["cores"]),
        "BUFFER_NUM": "2" if cfg["double_buffer"] else "1",
        "FUSED": "true" if cfg.get("fused", 1) else "false",
        "KIND": str(KIND_CODES[op.kind]),
        "WIDTH": str(int(op.width)),
        "HEAD_DIM": str(int(op.head_dim)),
        "UB_BYTES": str(int(profile.ub_bytes)),
        "InputT": INPUT_TYPES[op.dtype],
    }


def render_vector_kernel(op: VectorOp, config: Mapping[str, Any], profile: SocProfile) -> str:
    """The kernel source for ``op`` with ``config`` written into its declarations."""
    return VECTOR.source(vector_values(op, config, profile))


def vector_program(op: VectorOp, config: Mapping[str, Any], profile: SocProfile,
                   target: NpuTarget) -> KernelProgram:
    """The build tree that times ``op`` under ``config`` and checks it against a host
    reference; ProgramUnavailable where no tiling runs (:func:`problem_reason`, a run
    mode without ACL), RenderError for a config outside the space."""
    why = problem_reason(op)
    if why is not None:
        raise ProgramUnavailable(why)
    values = vector_values(op, config, profile)
    return VECTOR.program(values, {
        "AOE_VECTOR_KIND": values["KIND"],
        "AOE_WIDTH": f"{values['WIDTH']}u",
        "AOE_HEAD_DIM": f"{values['HEAD_DIM']}u",
        "AOE_CORES": f"{values['CORES']}u",
        "AOE_FUSED": "1" if values["FUSED"] == "true" else "0",
    }, op.dtype, op.rows, profile, target,
        f"Ascend C {op.kind} kernel (templates/vector_kernel.cpp)")
