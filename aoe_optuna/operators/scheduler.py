"""Which shape gets the next measurements: Ansor's gradient rule, and round-robin.

The end-to-end objective is the step time ``fixed + sum_i w_i g_i`` where
``g_i`` is shape i's best latency so far and ``w_i`` its runs per step, so
the tokens/s that a chunk of measurements on shape i buys is proportional to
``w_i`` times the latency drop it brings. Following Ansor's task scheduler
(Zheng et al., OSDI 2020, section 6), the expected drop blends what the last
chunk gave (the backward difference) with an optimistic forward guess: the
drop if the curve kept its average rate ``g_i / t_i`` so far, but never below
the latency that the best shape's fraction of its roofline would give this
shape (the "similar tasks" bound; our roofline is known per shape, so it
stands in for Ansor's throughput of similar tasks). Each shape first gets a
warm-up of its own (the sampler's start-up design), fewest-first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

ALPHA = 0.2  # weight of the backward difference (Ansor's alpha)
BETA = 1.2  # optimism: a shape may get this much closer to its roofline than the best one did


@dataclass
class ShapeHistory:
    """What the scheduler knows of one shape's study."""

    weight: float  # runs per step
    roofline_s: float  # the latency no tiling can beat
    best_s: list[float] = field(default_factory=list)  # best latency after each measurement
    exhausted: bool = False  # every feasible config measured

    @property
    def measured(self) -> int:
        return len(self.best_s)

    @property
    def best(self) -> float:
        return self.best_s[-1] if self.best_s else math.inf

    @property
    def roofline_fraction(self) -> float:
        return self.roofline_s / self.best if math.isfinite(self.best) else 0.0


class Scheduler(Protocol):
    name: str

    def next_shape(self, shapes: Sequence[ShapeHistory]) -> int | None:
        """Index of the shape to measure next; None when no shape can take more."""
        ...


@dataclass
class RoundRobin:
    """Every shape in turn: the baseline a scheduler has to beat."""

    name: str = "round-robin"

    def next_shape(self, shapes: Sequence[ShapeHistory]) -> int | None:
        open_ = [i for i, s in enumerate(shapes) if not s.exhausted]
        return min(open_, key=lambda i: (shapes[i].measured, i)) if open_ else None


@dataclass
class GradientScheduler:
    """Ansor's rule: the shape whose next ``chunk`` measurements should cut the step most."""

    warmup: int = 8  # measurements each shape gets before the rule applies
    chunk: int = 4  # measurements per allocation
    alpha: float = ALPHA
    beta: float = BETA
    name: str = "gradient"

    def next_shape(self, shapes: Sequence[ShapeHistory]) -> int | None:
        open_ = [i for i, s in enumerate(shapes) if not s.exhausted]
        if not open_:
            return None
        cold = [i for i in open_ if shapes[i].measured < self.warmup
                or not math.isfinite(shapes[i].best)]
        if cold:
            return min(cold, key=lambda i: (shapes[i].measured, i))
        target = self.target_fraction(shapes)
        return max(open_, key=lambda i: (self.expected_gain(shapes[i], target), -i))

    def target_fraction(self, shapes: Sequence[ShapeHistory]) -> float:
        """The fraction of roofline every shape is hoped to reach."""
        best = max((s.roofline_fraction for s in shapes), default=0.0)
        return min(1.0, self.beta * best)

    def expected_gain(self, shape: ShapeHistory, target_fraction: float) -> float:
        """Seconds per step the next chunk is expected to save on this shape."""
        return shape.weight * self.expected_drop(shape, target_fraction)

    def expected_drop(self, shape: ShapeHistory, target_fraction: float) -> float:
        """Latency drop (s) the next ``chunk`` measurements should bring to ``shape``."""
        t, g = shape.measured, shape.best
        before = shape.best_s[max(t - 1 - self.chunk, 0)]
        backward = (before - g) if math.isfinite(before) else 0.0
        floor = shape.roofline_s / target_fraction if target_fraction > 0 else 0.0
        forward = min(g * self.chunk / t, max(g - floor, 0.0))
        return self.alpha * backward + (1.0 - self.alpha) * forward


SCHEDULERS = {"gradient": GradientScheduler, "round-robin": RoundRobin}


def make_scheduler(name: str, chunk: int = 4, warmup: int = 8) -> Scheduler:
    if name == "round-robin":
        return RoundRobin()
    if name == "gradient":
        return GradientScheduler(warmup=warmup, chunk=chunk)
    raise ValueError(f"scheduler: expected one of {list(SCHEDULERS)}, got {name!r}")
