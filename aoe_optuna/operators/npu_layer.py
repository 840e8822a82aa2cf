"""Attention, vector and gating kernels of an operator run timed on the npu backend.

On the simulator an attention or vector kernel's study is measured by the model
(:class:`aoe_optuna.operators.units.ModelEvaluator`). On the npu backend each
candidate is its kind's program (:meth:`LayerKind.npu_program`: the kernel, its host
program with a host reference, the build tree), which the backend builds through its
build cache and times with the GEMM's timing policy (:meth:`BackendBase.measure_program`):
a compiler error, an ACL error, a crash, a hang or a wrong result (``accuracy``) is a
failed trial of its kind, as for a GEMM. A kind the backend cannot time for a problem
(:class:`ProgramUnavailable`: its kernel lacks the problem, no catlass checkout, the
CPU twin's run mode) is left out of the run with one line saying why
(:func:`untimed`); the rest are tuned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from aoe_optuna.backends.base import FAILURE_LOG, BackendBase, BuildAhead
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget, ProgramUnavailable
from aoe_optuna.backends.npu.sources import RenderError
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.study.run.objective import Evaluation


def program_of(op: LayerOperator, config: Mapping[str, Any], profile: SocProfile,
               target: NpuTarget) -> KernelProgram:
    """``op``'s kernel under ``config`` with its host program, as its kind renders it."""
    return op.operator_kind.npu_program(op.problem, op.dtype, config, profile, target)


def untimed(ops: Sequence[LayerOperator], profile: SocProfile,
            target: NpuTarget) -> dict[int, str]:
    """Index into ``ops`` -> why the npu backend cannot time that operator whatever the
    tiling (one line naming the operator); the others are timed."""
    out: dict[int, str] = {}
    for i, op in enumerate(ops):
        try:
            program_of(op, op.default_config(profile), profile, target)
        except ProgramUnavailable as exc:
            out[i] = f"{op.kind} {op.dims}: not timed on the npu backend: {exc}"
    return out


class ProgramEvaluator:
    """The evaluator of an attention or vector study on the npu backend: one call of the
    kernel as its host program times it. Its value is calls per second, as the model's."""

    def __init__(self, op: LayerOperator, profile: SocProfile, backend: BackendBase) -> None:
        self.op = op
        self.profile = profile
        self.backend = backend
        self.target = backend.target()
        self.roofline_s = op.roofline_s(profile)

    def build_ahead(self, full_config: Mapping[str, Any]) -> list[BuildAhead | None]:
        """The candidate's program built into the cache (a build pool's step); a config
        that renders no program is refused by :meth:`evaluate`, as without a pool."""
        try:
            program = program_of(self.op, full_config, self.profile, self.target)
        except (ProgramUnavailable, RenderError):
            return [BuildAhead(0.0, cached=False, ok=False)]
        return [self.backend.build_program_ahead(program)]

    def evaluate(self, full_config: Mapping[str, Any]) -> Evaluation:
        try:
            program = program_of(self.op, full_config, self.profile, self.target)
        except (ProgramUnavailable, RenderError) as exc:
            kind = "unsupported" if isinstance(exc, ProgramUnavailable) else "infeasible"
            return Evaluation(ok=False, failure_kind=kind, reason=f"{self.op.kind}: {exc}")
        m = self.backend.measure_program(program)
        build_s = float((m.extra or {}).get("build_s", 0.0) or 0.0)
        if not m.ok:
            return Evaluation(ok=False, cost_s=m.cost_s, build_s=build_s,
                              failure_kind=m.failure_kind,
                              reason=f"{self.op.kind} {self.op.dims}: {m.reason}",
                              log=str(m.extra.get(FAILURE_LOG, "")) if m.extra else "")
        t = float(m.latency_s or math.nan)
        flops = self.op.flops()
        return Evaluation(ok=True, tokens_per_s=1.0 / t, latency_s={self.op.kind: t},
                          cost_s=m.cost_s, build_s=build_s,
                          tflops=math.nan if flops is None else flops / t / 1e12,
                          roofline_fraction=self.roofline_s / t)

    def remeasure(self, full_config: Mapping[str, Any]) -> float | None:
        """The same config timed again (a new run on the device)."""
        e = self.evaluate(full_config)
        return e.latency_s.get(self.op.kind) if e.ok else None
