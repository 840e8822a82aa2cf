"""Render one npu-backend candidate: the Ascend C kernel, its host program and CMake project.

The kernel template (``npu_templates/gemm_kernel.cpp``, shipped to users as
``studies/kernels/gemm_kernel.cpp``) declares each tunable once at its top; the
config's values replace those declarations' values. Nothing from a spec or a
trial is pasted as text: every value written is an ``int`` that passed
validation, ``true``/``false``, or a name looked up in a fixed table here
(:data:`INPUT_TYPES`, :data:`OPT_FLAGS`, :data:`SCHEDULE_FLAGS`, the layout names
of :mod:`aoe_optuna.space.params`). The toolkit path never enters a file: it is a
CMake command-line argument.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.params import KNOWN_PARAMS, LAYOUTS, ParamError, canonical_value

KERNEL_NAME = "gemm_kernel"
KERNEL_FILE = f"{KERNEL_NAME}.cpp"
CONFIG_HEADER = "aoe_gemm_config.h"
RUN_MODES = ("npu", "sim", "cpu")
TILE_LIMIT = 4096  # no tile edge past this fits any AI core buffer
UNROLL_LIMIT = 64

# The kernel's declaration of each tunable (opt_level and schedule are build flags).
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
# Workload dtype -> the kernel's InputT, and the relative tolerance of C: one ulp of the
# output type (inputs are exact, so rounding C is the only error; see main.cpp).
INPUT_TYPES = {"fp16": "half", "bf16": "bfloat16_t"}
RTOL = {"fp16": 2.0**-10, "bf16": 2.0**-7}
OPT_FLAGS = {"O0": ("-O0",), "O1": ("-O1",), "O2": ("-O2",), "O3": ("-O3",)}
# LLVM machine-scheduler choices of the bisheng (LLVM-based) kernel compiler; whether the
# AI core back end honours each one is unverified (docs/NPU.md).
SCHEDULE_FLAGS: dict[str, tuple[str, ...]] = {
    "default": (),
    "balanced": ("-mllvm", "-misched=converge"),
    "throughput": ("-mllvm", "-misched=ilpmax"),
    "latency": ("-mllvm", "-misched=ilpmin"),
}
IMPLEMENTED_LAYOUTS = ("row_major", "z_major")
# catlass knobs the simple kernel does not have: it runs only at these values (the
# catlass kernel, backend option kernel=catlass, has them all; docs/NPU.md).
CATLASS_ONLY = {"split_k": 1, "padding": 0, "preload": 0, "unit_flag": 0,
                "layout_a": "row_major", "layout_b": "row_major", "swizzle_offset": 3,
                "swizzle_direction": 0}
_SOC_NAME = re.compile(r"Ascend[0-9A-Za-z_]{1,40}")


class RenderError(ValueError):
    """A config or template that cannot be rendered; the message names the value."""


def template_text(name: str) -> str:
    """A file of ``templates/`` (the package data of this backend)."""
    return (resources.files("aoe_optuna.backends.npu") / "templates" / name).read_text()


def validate_config(
    config: Mapping[str, Any], choices: Mapping[str, Sequence[Any]] | None = None
) -> dict[str, Any]:
    """Every known parameter, canonical and in range (and among ``choices`` when given)."""
    missing = [name for name in KNOWN_PARAMS if name not in config]
    if missing:
        raise RenderError(f"config lacks {missing}; the npu backend needs every known parameter")
    out: dict[str, Any] = {}
    for name in KNOWN_PARAMS:
        try:
            value = canonical_value(name, config[name])
        except ParamError as exc:
            raise RenderError(str(exc)) from None
        if choices is not None and name in choices:
            allowed = [canonical_value(name, v) for v in choices[name]]
            if value not in allowed:
                raise RenderError(f"{name}={value!r} is not one of the space's choices {allowed}")
        out[name] = value
    for name in ("tile_m", "tile_k", "tile_n"):
        if not 16 <= out[name] <= TILE_LIMIT or out[name] % 16:
            raise RenderError(f"{name}={out[name]}: expected a multiple of 16 from 16 to "
                              f"{TILE_LIMIT}")
    if not 0 <= out["unroll_factor"] <= UNROLL_LIMIT:
        raise RenderError(f"unroll_factor={out['unroll_factor']}: expected 0..{UNROLL_LIMIT}")
    return out


def unsupported_reason(config: Mapping[str, Any], dtype: str, k: int) -> str | None:
    """Why the shipped kernel cannot run this config or GEMM at all, or None."""
    if dtype not in INPUT_TYPES:
        return f"dtype {dtype}: the Ascend C kernel implements {sorted(INPUT_TYPES)} only"
    if config["quantization"]:
        return "quantization=true: the Ascend C kernel has no int8 path"
    if config["layout"] not in IMPLEMENTED_LAYOUTS:
        return (f"layout={config['layout']}: the Ascend C kernel implements "
                f"{list(IMPLEMENTED_LAYOUTS)} only")
    if k % 16:
        return f"K={k}: the Ascend C kernel needs K to be a multiple of 16"
    for name, only in CATLASS_ONLY.items():
        if config.get(name, only) != only:
            return (f"{name}={config[name]!r}: the simple kernel has no such knob "
                    "(backend option kernel=catlass has)")
    l1_k = int(config.get("l1_k", 0))
    if l1_k and l1_k % int(config["tile_k"]):
        return f"l1_k={l1_k}: the simple kernel needs a multiple of tile_k={config['tile_k']}"
    return None


def kernel_values(config: Mapping[str, Any], profile: SocProfile, dtype: str) -> dict[str, str]:
    """Declaration name -> literal, for every constant the kernel template declares."""
    if dtype not in INPUT_TYPES:
        raise RenderError(f"dtype {dtype!r}: expected one of {sorted(INPUT_TYPES)}")
    values = {
        "TILE_M": str(int(config["tile_m"])),
        "TILE_K": str(int(config["tile_k"])),
        "TILE_N": str(int(config["tile_n"])),
        "PIPELINE": str(int(config["pipeline"])),
        "L1_PREFETCH": str(int(config["l1_prefetch"])),
        "OUTPUT_ALIGN": str(int(config["output_align"])),
        "UNROLL_FACTOR": str(int(config["unroll_factor"])),
        "LAYOUT": LAYOUTS[LAYOUTS.index(config["layout"])],
        "QUANTIZATION": "true" if config["quantization"] else "false",
        "InputT": INPUT_TYPES[dtype],
        "L1_K_STEPS": str(l1_k_steps(config, profile)),
    }
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
    """The kernel compiler's flags for the config's opt_level and schedule."""
    return OPT_FLAGS[config["opt_level"]] + SCHEDULE_FLAGS[config["schedule"]]


def check_soc(profile: SocProfile) -> str:
    if not _SOC_NAME.fullmatch(profile.soc):
        raise RenderError(f"hardware soc {profile.soc!r}: expected a CANN SOC_VERSION "
                          "such as Ascend910B2")
    return profile.soc


def render_config_header(
    config: Mapping[str, Any], profile: SocProfile, dtype: str, run_mode: str
) -> str:
    """``aoe_gemm_config.h``: what the host program must agree on with the kernel."""
    if run_mode not in RUN_MODES:
        raise RenderError(f"run_mode {run_mode!r}: expected one of {list(RUN_MODES)}")
    lines = [
        "// Rendered by aoe_optuna/backends/npu/render.py; the kernel's twin of these",
        "// values is in gemm_kernel.cpp.",
        "#pragma once",
        f'#define AOE_SOC_VERSION "{check_soc(profile)}"',
        f'#define AOE_RUN_MODE "{run_mode}"',
        f"#define AOE_CUBE_CORES {int(profile.cube_cores)}u",
        f"#define AOE_TILE_M {int(config['tile_m'])}u",
        f"#define AOE_TILE_N {int(config['tile_n'])}u",
        f"#define AOE_OUTPUT_ALIGN {int(config['output_align'])}",
        f"#define AOE_LAYOUT_Z {int(config['layout'] == 'z_major')}",
        f"#define AOE_INPUT_BF16 {int(dtype == 'bf16')}",
        f"#define AOE_RTOL {float(RTOL[dtype])!r}",
        "",
    ]
    return "\n".join(lines)


def cpu_kernel_options(config: Mapping[str, Any]) -> tuple[str, ...]:
    """What the host compiler of the CPU twin takes: the optimisation level, never the
    bisheng scheduler flags (``-mllvm -misched=...`` is an LLVM option g++ rejects)."""
    return OPT_FLAGS[config["opt_level"]]


def render_cmake(template: str, soc: str, run_mode: str, options: Sequence[str],
                 cpu_options: Sequence[str] = ()) -> str:
    fills = {
        "@RUN_MODE@": run_mode,
        "@SOC_VERSION@": soc,
        "@KERNEL_NAME@": KERNEL_NAME,
        "@KERNEL_OPTIONS@": " ".join(options),
        "@CPU_KERNEL_OPTIONS@": " ".join(cpu_options),
    }
    for key, value in fills.items():
        if key not in template:
            raise RenderError(f"CMakeLists template lacks {key}")
        template = template.replace(key, value)
    return template


def render_project(
    config: Mapping[str, Any],
    dtype: str,
    profile: SocProfile,
    run_mode: str,
    choices: Mapping[str, Sequence[Any]] | None = None,
) -> dict[str, str]:
    """File name -> text of the whole CMake project of one candidate."""
    cfg = validate_config(config, choices)
    if run_mode not in RUN_MODES:
        raise RenderError(f"run_mode {run_mode!r}: expected one of {list(RUN_MODES)}")
    soc = check_soc(profile)
    return {
        KERNEL_FILE: render_kernel(template_text(KERNEL_FILE), kernel_values(cfg, profile, dtype)),
        "main.cpp": template_text("main.cpp"),
        CONFIG_HEADER: render_config_header(cfg, profile, dtype, run_mode),
        "CMakeLists.txt": render_cmake(template_text("CMakeLists.txt"), soc, run_mode,
                                       kernel_options(cfg), cpu_kernel_options(cfg)),
    }
