"""The Ascend C GEMM kernel: its one source, its declarations and its build flags.

The npu backend builds candidates from it and ``aoe-tune export`` writes the
tuned kernel from it, so both take from here the source
(``templates/gemm_kernel.cpp``, package data found wherever the package is
installed), the name each tunable is declared under, and the compiler flags
that ``opt_level`` and ``schedule`` stand for. Values are written as literals
only: an ``int`` that passed validation, ``true``/``false``, or a name looked
up in a fixed table here or in :mod:`aoe_optuna.space.params`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.params import LAYOUTS

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
# The tunables that are build flags of the kernel compiler, not source constants.
BUILD_OPTIONS = ("opt_level", "schedule")
OPT_FLAGS: dict[str, tuple[str, ...]] = {
    "O0": ("-O0",), "O1": ("-O1",), "O2": ("-O2",), "O3": ("-O3",),
}
# LLVM machine-scheduler choices of the bisheng (LLVM-based) kernel compiler; whether the
# AI core back end honours each one is unverified (docs/NPU.md).
SCHEDULE_FLAGS: dict[str, tuple[str, ...]] = {
    "default": (),
    "balanced": ("-mllvm", "-misched=converge"),
    "throughput": ("-mllvm", "-misched=ilpmax"),
    "latency": ("-mllvm", "-misched=ilpmin"),
}
# Workload dtype -> the kernel's InputT.
INPUT_TYPES = {"fp16": "half", "bf16": "bfloat16_t"}


# The host programs' shared exit codes, ACL check and timing rules: every build tree
# carries it beside its program.
BENCH_COMMON_FILE = "aoe_bench_common.h"


class RenderError(ValueError):
    """A config or template that cannot be rendered; the message names the value."""


def template_text(name: str) -> str:
    """A file of ``templates/`` (the package data of this backend)."""
    return (resources.files("aoe_optuna.backends.npu") / "templates" / name).read_text()


def kernel_source_path() -> Path:
    """Where the kernel source lies in the installed package (for a user to read or copy)."""
    return Path(str(resources.files("aoe_optuna.backends.npu") / "templates" / KERNEL_FILE))


def build_flags(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The kernel compiler's flags for the build options ``config`` sets (either or both)."""
    flags: tuple[str, ...] = ()
    if "opt_level" in config:
        flags += OPT_FLAGS[config["opt_level"]]
    if "schedule" in config:
        flags += SCHEDULE_FLAGS[config["schedule"]]
    return flags


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


def set_declaration(text: str, name: str, literal: str) -> str:
    """``text`` with the value of its one declaration of ``name`` replaced by ``literal``.

    Recognised forms: ``constexpr <type> NAME = v;``, ``#define NAME v`` and
    ``using NAME = v;``. None or several matches are an error.
    """
    forms = (
        rf"^(\s*(?:static\s+)?constexpr\s+[\w:]+\s+{name}\s*=\s*)([^;\n]+?)(\s*;)",
        rf"^(\s*#\s*define\s+{name}\s+)(\S+)()",
        rf"^(\s*using\s+{name}\s*=\s*)([\w:]+)(\s*;)",
    )
    hits = [m for form in forms for m in re.finditer(form, text, flags=re.MULTILINE)]
    if len(hits) != 1:
        raise RenderError(f"kernel template: expected one declaration of {name}, "
                          f"found {len(hits)}")
    m = hits[0]
    return text[: m.start(2)] + literal + text[m.end(2):]


def render_kernel(template: str, values: Mapping[str, str]) -> str:
    for name, literal in values.items():
        template = set_declaration(template, name, literal)
    return template


def kernel_options(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The kernel compiler's flags for the config's opt_level and schedule (both required)."""
    return OPT_FLAGS[config["opt_level"]] + SCHEDULE_FLAGS[config["schedule"]]
