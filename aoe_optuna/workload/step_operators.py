"""The non-GEMM operators of a step that an operator run tunes: attention and the
vector kernels, each call with the time the workload charges it.

A workload charges these at some fixed figure (the roofline, or a model of a
default tiling) inside its ``fixed_s``. When they are tuned, each call's
charge is replaced by the latency its tuned kernel reaches, so the workload
keeps, per call, what it charged: the step time is then what stays charged
plus every operator's own latency.
"""

from __future__ import annotations

from dataclasses import dataclass

from aoe_optuna.space.layer_problem import LayerProblem


@dataclass(frozen=True)
class LayerOpCall:
    """One non-GEMM operator of a step: its problem, how often it runs, what it is charged."""

    name: str  # unique in the workload beside the GEMM names ("attention", "b16/rope")
    problem: LayerProblem  # it says its part and kind (space.layer_problem)
    dtype: str
    count: int  # calls per step
    charged_s: float  # seconds per call that the workload's fixed_s holds for it

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"count: expected an integer of at least 1, got {self.count!r}")
        if not 0.0 <= self.charged_s < float("inf"):
            raise ValueError(f"charged_s: expected a finite time, got {self.charged_s!r}")

    @property
    def part(self) -> str:
        """``attention`` or ``vector``: the step-split part it belongs to."""
        return self.problem.part

    @property
    def kind(self) -> str:
        """``attention`` or the vector kernel's kind (``rmsnorm``, ``swiglu``...)."""
        return self.problem.kind

    def renamed(self, name: str, count: int) -> LayerOpCall:
        return LayerOpCall(name, self.problem, self.dtype, count, self.charged_s)
