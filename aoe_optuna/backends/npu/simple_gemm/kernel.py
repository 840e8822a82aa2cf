"""The simple kernel, this project's Ascend C GEMM: its one source and its declarations.

The npu backend builds candidates from it and ``aoe-tune export`` writes the
tuned kernel from it, so both take from here the source
(``templates/gemm_kernel.cpp``) and the name each tunable is declared under; the
compiler flags that ``opt_level`` and ``schedule`` stand for are
:mod:`aoe_optuna.backends.npu.compile_flags`'. Values are written as literals only: an
``int`` that passed validation, ``true``/``false``, or a name looked up in a fixed
table here or in :mod:`aoe_optuna.space.params`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aoe_optuna.backends.npu.sources import INPUT_TYPES, RenderError, Templates
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.params import LAYOUTS

TEMPLATES = Templates("aoe_optuna.backends.npu.simple_gemm")
KERNEL_NAME = "gemm_kernel"
KERNEL_FILE = f"{KERNEL_NAME}.cpp"
# The kernel's declaration of each tunable that is a source constant.
KERNEL_CONSTANTS = {
    "tile_m": "TILE_M",
    "tile_k": "TILE_K",
    "tile_n": "TILE_N",
    "pipeline": "PIPELINE",
    "l1_prefetch": "L1_PREFETCH",
    "output_align": "OUTPUT_ALIGN",
    "unroll_factor": "UNROLL_FACTOR",
    "layout": "LAYOUT",
    "quantization": "QUANTIZATION",
}


def kernel_source_path() -> Path:
    """Where the kernel source lies in the installed package (for a user to read or copy)."""
    return TEMPLATES.path(KERNEL_FILE)


def kernel_values(config: Mapping[str, Any], profile: SocProfile, dtype: str) -> dict[str, str]:
    """Declaration name -> literal, for every constant the kernel declares."""
    if dtype not in INPUT_TYPES:
        raise RenderError(f"dtype {dtype!r}: expected one of {sorted(INPUT_TYPES)}")
    values = {}
    for param, name in KERNEL_CONSTANTS.items():
        value = config[param]
        if param == "layout":
            values[name] = LAYOUTS[LAYOUTS.index(value)]  # a name of the fixed table
        elif isinstance(value, bool):
            values[name] = "true" if value else "false"
        else:
            values[name] = str(int(value))
    values["InputT"] = INPUT_TYPES[dtype]
    values["L1_K_STEPS"] = str(l1_k_steps(config, profile))
    return values


def l1_k_steps(config: Mapping[str, Any], profile: SocProfile) -> int:
    """MMADs per L1 block: l1_k / tile_k, or the profile's figure when l1_k is 0."""
    l1_k = int(config.get("l1_k", 0))
    return l1_k // int(config["tile_k"]) if l1_k > 0 else int(profile.l1_k_steps)
