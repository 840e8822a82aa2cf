"""The one interface every backend implements, and what a measurement returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from aoe_optuna.workload.models import Gemm

FailureKind = Literal["infeasible", "build", "runtime", "timeout", "accuracy", "unsupported"]


@dataclass(frozen=True)
class Measurement:
    """The outcome of building and timing one config on one GEMM.

    ``cost_s`` is what the measurement cost (or, on the simulator, would cost
    on hardware: build + warm-up + timed runs), so time budgets mean the same
    on every backend.
    """

    ok: bool
    latency_s: float | None = None
    failure_kind: FailureKind | None = None
    reason: str = ""
    cost_s: float = 0.0
    spread: float | None = None  # relative spread of the timed repeats, if known
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def success(cls, latency_s: float, cost_s: float, **kw: Any) -> Measurement:
        return cls(ok=True, latency_s=float(latency_s), cost_s=float(cost_s), **kw)

    @classmethod
    def failure(cls, kind: FailureKind, reason: str, cost_s: float = 0.0, **kw: Any) -> Measurement:
        return cls(ok=False, failure_kind=kind, reason=reason, cost_s=float(cost_s), **kw)


class Backend(Protocol):
    """Builds and times one config of a GEMM kernel."""

    name: str

    def measure(self, config: Mapping[str, Any], gemm: Gemm) -> Measurement:
        """Latency of ``gemm`` with ``config`` (a full config: untuned params included)."""
        ...
