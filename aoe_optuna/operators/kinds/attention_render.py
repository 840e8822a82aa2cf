"""The kernel the decode and prefill attention kinds export and time: catlass's
flash-attention-infer instantiation header (:mod:`aoe_optuna.backends.npu.catlass.fai`)
and its build tree with the host program that times and checks it (``fai_program``).
MLA decode has a kernel of its own (:mod:`aoe_optuna.backends.npu.catlass.mla`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aoe_optuna.backends.npu.catlass.args import CatlassArgError
from aoe_optuna.backends.npu.catlass.fai import (
    fai_args,
    fai_program,
    problem_reason,
    render_fai_header,
)
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.export.catlass_header import provenance
from aoe_optuna.export.kernel_source import ExportError, ExportInfo
from aoe_optuna.hardware.profile import SocProfile


def fai_problem_reason(phase: str, problem: Any, dtype: str,
                       profile: SocProfile) -> str | None:
    """Why catlass's flash attention has no kernel for ``problem`` whatever the tiling,
    as the export's one line says it (naming ``phase``); None where it has one."""
    why = problem_reason(problem, dtype, profile)
    return None if why is None else f"{phase} attention: {why}"


def render_fai(phase: str, problem: Any, dtype: str, config: Mapping[str, Any],
               profile: SocProfile, info: ExportInfo | None) -> tuple[str, str]:
    """The header for ``problem`` under ``config``; a problem catlass's kernel cannot run
    is refused in one line naming ``phase`` (``decode`` or ``prefill``)."""
    try:
        args = fai_args(problem, config, dtype, profile)
    except CatlassArgError as exc:
        raise ExportError(f"{phase} attention: {exc}") from None
    text = render_fai_header(args, provenance(info, config, dtype, profile.soc))
    missing = [c.param for c in args.counterparts if not c.matches]
    note = f"; no catlass counterpart: {', '.join(missing)}" if missing else ""
    return text, f"catlass flash-attention-infer ({args.phase}) instantiation{note}"


def fai_program_for(problem: Any, dtype: str, config: Mapping[str, Any], profile: SocProfile,
                    target: NpuTarget) -> KernelProgram:
    """The build tree that times ``problem`` under ``config`` on the npu backend, its
    header carrying the same provenance lines as the exported one."""
    return fai_program(problem, config, dtype, profile, target,
                       provenance(None, config, dtype, profile.soc))
