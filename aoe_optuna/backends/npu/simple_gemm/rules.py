"""What the simple kernel's renderer refuses, as rules of a study's space.

A study of the simple kernel's knobs exports the npu backend's own kernel
(``aoe-tune export --output``, :func:`.render.tuned_kernel`) and, on the npu backend,
builds it. Each refusal of :func:`.render.validate_config` and
:func:`.render.unsupported_reason` that a tiling can meet is one rule here, so a
sampler never proposes a config the kernel does not have (an int8 or col_major
config on the simulator would be measured, and its export refused after the study).
The kernel is this project's (``templates/gemm_kernel.cpp``): it implements half and
bfloat16 inputs, row-major and zN (z_major) operands, and none of catlass's knobs.

The dtype is not a rule: no tiling gives the kernel an element type it lacks
(:func:`product_reason`).
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.backends.npu.simple_gemm.render import (
    CATLASS_ONLY,
    IMPLEMENTED_LAYOUTS,
    TILE_LIMIT,
    UNROLL_LIMIT,
)
from aoe_optuna.backends.npu.sources import INPUT_TYPES
from aoe_optuna.space.constraints import Columns
from aoe_optuna.space.kernel_rule import KernelRule
from aoe_optuna.space.params import TILE_NAMES, to_code

KERNEL = "templates/gemm_kernel.cpp"


def product_reason(dtype: str) -> str | None:
    """Why the simple kernel has no build for this dtype whatever the tiling, or None."""
    if dtype not in INPUT_TYPES:
        return f"dtype {dtype}: the Ascend C kernel implements {sorted(INPUT_TYPES)} only"
    return None


def _at_simple_values(c: Columns) -> np.ndarray:
    return np.logical_and.reduce([c[n] == to_code(n, v) for n, v in CATLASS_ONLY.items()])


def simple_kernel_rules() -> list[KernelRule]:
    """The rules of a study whose kernel is the simple one."""
    layouts = [to_code("layout", name) for name in IMPLEMENTED_LAYOUTS]
    return [
        KernelRule(
            "kernel_tiles", frozenset(TILE_NAMES),
            lambda c: np.logical_and.reduce([(c[t] >= 16) & (c[t] <= TILE_LIMIT) & (c[t] % 16 == 0)
                                             for t in TILE_NAMES]),
            f"the kernel takes tile edges that are multiples of 16 from 16 to {TILE_LIMIT} "
            f"[{KERNEL}]"),
        KernelRule(
            "kernel_int8", frozenset({"quantization"}), lambda c: c["quantization"] == 0,
            f"the Ascend C kernel has no int8 path [{KERNEL}]"),
        KernelRule(
            "kernel_layout", frozenset({"layout"}), lambda c: np.isin(c["layout"], layouts),
            f"the Ascend C kernel implements {list(IMPLEMENTED_LAYOUTS)} operands only "
            f"[{KERNEL}]"),
        KernelRule(
            "kernel_unroll", frozenset({"unroll_factor"}),
            lambda c: (c["unroll_factor"] >= 0) & (c["unroll_factor"] <= UNROLL_LIMIT),
            f"the kernel unrolls its K loop up to {UNROLL_LIMIT} times [{KERNEL}]"),
        KernelRule(
            "kernel_no_catlass_knobs", frozenset(CATLASS_ONLY), _at_simple_values,
            "the simple kernel has none of catlass's knobs (backend option kernel=catlass "
            "has them)"),
        KernelRule(
            "kernel_l1_k", frozenset({"l1_k", "tile_k"}),
            lambda c: (c["l1_k"] == 0) | (c["l1_k"] % c["tile_k"] == 0),
            f"the kernel walks an L1 tile in whole tile_k steps [{KERNEL}]"),
    ]
