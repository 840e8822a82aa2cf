"""Render one simple-kernel candidate: the Ascend C GEMM, its host program and CMake project.

The kernel comes from :mod:`.kernel` (the one source, which ``aoe-tune export`` writes
from too: :func:`tuned_kernel`), its build flags from
:mod:`aoe_optuna.backends.npu.compile_flags`; this module validates
the config and renders the project around the kernel. Nothing from a spec or a
trial is pasted as text: every value written is an ``int`` that passed
validation, ``true``/``false``, or a name looked up in a fixed table. The
toolkit path never enters a file: it is a CMake command-line argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aoe_optuna.backends.npu.ascendc_cmake import CMAKE_FILE, render_cmake
from aoe_optuna.backends.npu.compile_flags import OPT_FLAGS, kernel_options
from aoe_optuna.backends.npu.simple_gemm.kernel import (
    KERNEL_FILE,
    KERNEL_NAME,
    TEMPLATES,
    kernel_values,
)
from aoe_optuna.backends.npu.sources import (
    BENCH_COMMON_FILE,
    INPUT_TYPES,
    RTOL,
    SHARED,
    RenderError,
    check_soc,
    render_kernel,
)
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.params import KNOWN_PARAMS, ParamError, canonical_value

CONFIG_HEADER = "aoe_gemm_config.h"
HOST_PROGRAM = "main.cpp"
RUN_MODES = ("npu", "sim", "cpu")
TILE_LIMIT = 4096  # no tile edge past this fits any AI core buffer
UNROLL_LIMIT = 64
IMPLEMENTED_LAYOUTS = ("row_major", "z_major")
# catlass knobs the simple kernel does not have: it runs only at these values (the
# catlass kernel, backend option kernel=catlass, has them all; docs/NPU.md).
CATLASS_ONLY = {"split_k": 1, "padding": 0, "preload": 0, "unit_flag": 0,
                "layout_a": "row_major", "layout_b": "row_major", "swizzle_offset": 3,
                "swizzle_direction": 0}


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


def tuned_kernel(config: Mapping[str, Any], profile: SocProfile, dtype: str) -> str:
    """The kernel source with ``config`` (every known parameter) written into it, as the
    backend builds it; RenderError when the config is out of range or the kernel cannot
    run it (a catlass knob, an int8 or col_major config, a dtype it lacks)."""
    cfg = validate_config(config)
    reason = unsupported_reason(cfg, dtype, 16)  # K=16: any K the kernel runs
    if reason is not None:
        raise RenderError(reason)
    return render_kernel(TEMPLATES.text(KERNEL_FILE), kernel_values(cfg, profile, dtype))


def render_config_header(
    config: Mapping[str, Any], profile: SocProfile, dtype: str, run_mode: str
) -> str:
    """``aoe_gemm_config.h``: what the host program must agree on with the kernel."""
    if run_mode not in RUN_MODES:
        raise RenderError(f"run_mode {run_mode!r}: expected one of {list(RUN_MODES)}")
    lines = [
        "// Rendered by aoe_optuna/backends/npu/simple_gemm/render.py; the kernel's twin of these",
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
        KERNEL_FILE: render_kernel(TEMPLATES.text(KERNEL_FILE), kernel_values(cfg, profile, dtype)),
        HOST_PROGRAM: TEMPLATES.text(HOST_PROGRAM),
        BENCH_COMMON_FILE: SHARED.text(BENCH_COMMON_FILE),
        CONFIG_HEADER: render_config_header(cfg, profile, dtype, run_mode),
        CMAKE_FILE: render_cmake(soc, run_mode, kernel_options(cfg), cpu_kernel_options(cfg),
                                 KERNEL_NAME, "gemm_bench", HOST_PROGRAM),
    }
