"""Render the cpu backend's C GEMM for one config, and its compiler flags.

Nothing from a spec or a trial reaches the source as text: every value is
first checked against :data:`aoe_optuna.space.params.KNOWN_PARAMS` (its type, or its
list of names), then turned into an integer, and only integers are put into
the template (``templates/cpu_gemm.c``). Names (``layout``, ``schedule``,
``opt_level``) select entries of fixed tables below.

Compiler flags per ``schedule`` (none of them changes the numerics beyond
FMA contraction, so every result stays checkable against numpy; no
``-ffast-math``):

* ``default``: none (baseline x86-64: SSE2, no FMA);
* ``balanced``: ``-funroll-loops``;
* ``throughput``: ``-march=native -funroll-loops`` (AVX2 + FMA on this host,
  wide vectors, unrolled loops);
* ``latency``: ``-march=native -mprefer-vector-width=128 -fno-unroll-loops``
  (the host's ISA with short vectors and compact loops: short prologues and
  remainders, less code to warm up).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Any

from aoe_optuna.space.params import KNOWN_PARAMS, LAYOUTS, ParamError, canonical_value

TEMPLATE = "cpu_gemm.c"
BASE_FLAGS = ("-std=gnu11", "-fPIC", "-shared", "-Wall")
SCHEDULE_FLAGS: dict[str, tuple[str, ...]] = {
    "default": (),
    "balanced": ("-funroll-loops",),
    "throughput": ("-march=native", "-funroll-loops"),
    "latency": ("-march=native", "-mprefer-vector-width=128", "-fno-unroll-loops"),
}
OPT_FLAGS = {"O0": "-O0", "O1": "-O1", "O2": "-O2", "O3": "-O3"}

# CPU-side bounds for the integer tunables: tiles are multiples of 16 (the
# micro-kernel takes 4 rows at a time; 16 floats are one 64-byte line) and
# at most 512 (the packed buffers are static arrays).
TILE_RANGE = (16, 512)
TILE_MULTIPLE = 16
UNROLL_RANGE = (0, 64)


@dataclass(frozen=True)
class CpuKernel:
    """A rendered kernel: the C source and the compiler flags for one config."""

    config: Mapping[str, Any]
    source: str
    flags: tuple[str, ...]


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config in canonical form, or ParamError naming the bad key and what was expected."""
    unknown = sorted(set(config) - set(KNOWN_PARAMS))
    if unknown:
        raise ParamError(f"{unknown[0]}: not a parameter the cpu backend knows "
                         f"(expected one of {', '.join(KNOWN_PARAMS)})")
    missing = [name for name in KNOWN_PARAMS if name not in config]
    if missing:
        raise ParamError(f"{missing[0]}: missing from the config (the cpu backend needs "
                         "every known parameter)")
    canon = {name: canonical_value(name, config[name]) for name in KNOWN_PARAMS}
    for name in ("tile_m", "tile_n", "tile_k"):
        v = canon[name]
        lo, hi = TILE_RANGE
        if not lo <= v <= hi or v % TILE_MULTIPLE:
            raise ParamError(f"{name}: expected a multiple of {TILE_MULTIPLE} from {lo} to {hi}, "
                             f"got {v}")
    lo, hi = UNROLL_RANGE
    if not lo <= canon["unroll_factor"] <= hi:
        raise ParamError(f"unroll_factor: expected an integer from {lo} to {hi}, "
                         f"got {canon['unroll_factor']}")
    return canon


def template_values(canon: Mapping[str, Any]) -> dict[str, int]:
    """The integers the template receives (and nothing else)."""
    values = {
        "tile_m": canon["tile_m"],
        "tile_n": canon["tile_n"],
        "tile_k": canon["tile_k"],
        "pipeline": canon["pipeline"],
        "l1_prefetch": canon["l1_prefetch"],
        "output_align": canon["output_align"],
        "layout": LAYOUTS.index(canon["layout"]),
        "unroll_factor": canon["unroll_factor"],
        "quantization": int(canon["quantization"]),
    }
    for key, v in values.items():
        if type(v) is not int:  # bools and numpy ints were canonicalised away above
            raise ParamError(f"{key}: expected a plain integer for the template, got {v!r}")
    return values


def compile_flags(canon: Mapping[str, Any]) -> tuple[str, ...]:
    return (*BASE_FLAGS, OPT_FLAGS[canon["opt_level"]], *SCHEDULE_FLAGS[canon["schedule"]])


def template_text() -> str:
    return (resources.files("aoe_optuna.backends.cpu") / "templates" / TEMPLATE).read_text()


def render(config: Mapping[str, Any]) -> CpuKernel:
    """Validate ``config`` and render its kernel; ParamError on any value out of its choices."""
    canon = validate_config(config)
    source = Template(template_text()).substitute(template_values(canon))
    return CpuKernel(config=canon, source=source, flags=compile_flags(canon))
