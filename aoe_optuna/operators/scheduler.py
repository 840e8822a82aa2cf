"""Which shape gets the next measurements: Ansor's gradient rule, and round-robin.

The end-to-end objective is the step time ``fixed + sum_i w_i g_i`` where
``g_i`` is shape i's best latency so far and ``w_i`` its runs per step, so
the tokens/s that a chunk of measurements on shape i buys is proportional to
``w_i`` times the latency drop it brings. Following Ansor's task scheduler
(Zheng et al., OSDI 2020, section 6), the expected drop blends what the last
chunk gave (the backward difference, weight alpha) with a forward guess, the
larger of two drops:

* the headroom to the roofline closed at an average rate,
  ``(g_i - roofline_i) / t_i`` per measurement (Ansor's ``g_i / t_i`` counts
  the whole latency as headroom, which keeps the budget on the slowest shape
  long after it sits near its roofline: decisions/0017);
* the drop to the latency at which the shape would reach 1/beta of the best
  roofline fraction that similar shapes reached (Ansor compares throughput
  with similar tasks; our per-shape roofline makes the fraction of it the
  comparison, and "similar" is the same dtype and the same side of the ridge
  point, since memory-bound and compute-bound GEMMs reach different
  fractions).

Unlike Ansor's, the forward guess never goes below the roofline. Each shape
first gets a warm-up of its own (the sampler's start-up design),
fewest-measured first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

ALPHA = 0.2  # weight of the backward difference (Ansor's alpha)
BETA = 2.0  # a shape under 1/beta of its group's best roofline fraction lags (Ansor's beta)
WARMUP = 8  # measurements each shape gets first: the GP-UCB sampler's start-up design
CHUNK = 4  # measurements per allocation (per worker)


@dataclass
class ShapeHistory:
    """What the scheduler knows of one shape's study."""

    weight: float  # runs per step
    roofline_s: float  # the latency no tiling can beat
    group: str = ""  # shapes of one group are "similar" (dtype, memory- or compute-bound)
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
    warmup: int  # measurements a shape gets before the rule applies
    chunk: int  # measurements per allocation

    def next_shape(self, shapes: Sequence[ShapeHistory]) -> int | None:
        """Index of the shape to measure next; None when no shape can take more."""
        ...


@dataclass
class RoundRobin:
    """Every shape in turn: the baseline a scheduler has to beat."""

    warmup: int = WARMUP
    chunk: int = CHUNK
    name: str = "round-robin"

    def next_shape(self, shapes: Sequence[ShapeHistory]) -> int | None:
        open_ = [i for i, s in enumerate(shapes) if not s.exhausted]
        return min(open_, key=lambda i: (shapes[i].measured, i)) if open_ else None


@dataclass
class GradientScheduler:
    """Ansor's rule: the shape whose next ``chunk`` measurements should cut the step most."""

    warmup: int = WARMUP
    chunk: int = CHUNK
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
        best = self.best_fractions(shapes)
        return max(open_, key=lambda i: (self.expected_gain(shapes[i], best[shapes[i].group]),
                                         -i))

    @staticmethod
    def best_fractions(shapes: Sequence[ShapeHistory]) -> dict[str, float]:
        """Per group: the best fraction of roofline any of its shapes has reached."""
        out: dict[str, float] = {}
        for s in shapes:
            out[s.group] = max(out.get(s.group, 0.0), s.roofline_fraction)
        return out

    def expected_gain(self, shape: ShapeHistory, best_fraction: float) -> float:
        """Seconds per step the next chunk is expected to save on this shape."""
        return shape.weight * self.expected_drop(shape, best_fraction)

    def expected_drop(self, shape: ShapeHistory, best_fraction: float) -> float:
        """Latency drop (s) the next ``chunk`` measurements should bring to ``shape``.

        Never more than the shape can still gain, its best latency less its
        roofline: a large last drop (the backward difference) says nothing of
        a shape that now sits at its roofline.
        """
        t, g = shape.measured, shape.best
        before = shape.best_s[max(t - 1 - self.chunk, 0)]
        backward = (before - g) if math.isfinite(before) else 0.0
        headroom = max(g - shape.roofline_s, 0.0)
        rate = headroom * self.chunk / t
        lagging = g - self.beta * shape.roofline_s / best_fraction if best_fraction > 0 else 0.0
        forward = min(max(rate, lagging), headroom)
        return min(self.alpha * backward + (1.0 - self.alpha) * forward, headroom)


SCHEDULERS = {"gradient": GradientScheduler, "round-robin": RoundRobin}


def make_scheduler(name: str, chunk: int = CHUNK, warmup: int = WARMUP) -> Scheduler:
    """The scheduler called ``name`` (``--scheduler``)."""
    if name == "round-robin":
        return RoundRobin(warmup=warmup, chunk=chunk)
    if name == "gradient":
        return GradientScheduler(warmup=warmup, chunk=chunk)
    raise ValueError(f"scheduler: expected one of {list(SCHEDULERS)}, got {name!r}")
