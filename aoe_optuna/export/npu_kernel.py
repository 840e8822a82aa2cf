"""Export a tuned config as the npu backend's own kernel, with its build flags.

The kernel is rendered by the backend's writer
(:func:`aoe_optuna.backends.npu.simple_gemm.render.tuned_kernel`) from the one source it
builds candidates from, so what a user builds is what the backend measured; the leading
comment records where the config came from and the compiler flags its ``opt_level`` and
``schedule`` stand for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.backends.npu.compile_flags import BUILD_OPTIONS, build_flags
from aoe_optuna.backends.npu.simple_gemm.render import tuned_kernel
from aoe_optuna.backends.npu.sources import RenderError
from aoe_optuna.export.kernel_source import ExportError, ExportInfo, config_text, export_header
from aoe_optuna.hardware.profile import SocProfile


def npu_kernel(full: Mapping[str, Any], profile: SocProfile, dtype: str,
               info: ExportInfo | None = None,
               tuned: Mapping[str, Any] | None = None) -> tuple[str, tuple[str, ...]]:
    """The kernel text for ``full`` (every known parameter) and its build flags.

    ``tuned``: the parameters the study tuned, shown in the header (default: ``full``).
    """
    try:
        body = tuned_kernel(full, profile, dtype)
    except RenderError as exc:
        raise ExportError(f"the npu backend's kernel: {exc}") from None
    options = {name: full[name] for name in BUILD_OPTIONS}
    shown = {k: v for k, v in (tuned or full).items() if k not in BUILD_OPTIONS}
    header = export_header(config_text(shown, options), options, info)
    return header + body, build_flags(options)


def write_npu_kernel(path: str | os.PathLike[str], full: Mapping[str, Any],
                     profile: SocProfile, dtype: str, info: ExportInfo | None = None,
                     tuned: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """Write the kernel; its build flags."""
    text, flags = npu_kernel(full, profile, dtype, info, tuned)
    write_atomic(path, text)
    return flags
