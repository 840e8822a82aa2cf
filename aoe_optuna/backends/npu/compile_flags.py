"""What a GEMM config's compile options stand for: the flags of the kernel compiler
(bisheng) that ``opt_level`` and ``schedule`` become, for the simple kernel's build, the
catlass instantiation's and an exported kernel's build line alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def build_flags(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The kernel compiler's flags for the build options ``config`` sets (either or both)."""
    flags: tuple[str, ...] = ()
    if "opt_level" in config:
        flags += OPT_FLAGS[config["opt_level"]]
    if "schedule" in config:
        flags += SCHEDULE_FLAGS[config["schedule"]]
    return flags


def kernel_options(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The kernel compiler's flags for the config's opt_level and schedule (both required)."""
    return OPT_FLAGS[config["opt_level"]] + SCHEDULE_FLAGS[config["schedule"]]
