"""The band of a step's tokens/s, composed from the bands of the kernels it is made of.

Rule: the relative error of the step time is the time-weighted SUM of its
parts' relative errors, |e_step| <= sum_i (t_i / T) |e_i|, the worst case,
for the median and the high mark alike; tokens/s = tokens / T carries the
same relative band to first order. The sum, not the root-sum-square, because
the errors are not independent: a model's error is systematic (one streaming
constant, one launch head), so every GEMM of a step misses the same way, and
the held-out validations show it (a source's figures lean one way, median
ratios 0.80-1.15). Root-sum-square would shrink the band by the square root
of the number of kernels and claim a precision no held-out figure backs.

A part charged from a measurement (a profile's other time) adds no error; a
part the simulator models without a checked band (an ``unchecked`` kind,
communication) is not given a number: its share of the step is reported
beside the band instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aoe_optuna.calibration.bands import Band

MEASURED = "measured"  # a part whose time is a measurement: no model error
UNMODELLED_CHECK = "unchecked"  # a modelled part no band covers (communication)


@dataclass(frozen=True)
class StepPart:
    """``seconds`` of the step timed by the model of band ``kind`` (or MEASURED)."""

    name: str
    kind: str
    seconds: float


@dataclass(frozen=True)
class StepBand:
    median: float
    high: float
    unchecked_share: float
    unchecked: tuple[str, ...]  # names of the parts without a band

    def text(self) -> str:
        """``±9.1% median, ±17% high; attention (12% of the step) unchecked``."""
        out = f"±{self.median:.1%} median, ±{self.high:.1%} high (held-out, time-weighted)"
        if self.unchecked:
            out += (f"; {', '.join(self.unchecked)} ({_share(self.unchecked_share)} of the "
                    "step) unchecked")
        return out


def _share(x: float) -> str:
    return f"{x:.0%}" if x >= 0.1 or x == 0 else f"{x:.1%}"


def step_band(parts: Sequence[StepPart], bands: Mapping[str, Band]) -> StepBand:
    """The step's band by the rule above; ``bands`` by kind (the shipped ones)."""
    total = sum(p.seconds for p in parts)
    if total <= 0:
        return StepBand(0.0, 0.0, 0.0, ())
    median = high = unchecked_s = 0.0
    unchecked: list[str] = []
    for p in parts:
        if p.seconds <= 0 or p.kind == MEASURED:
            continue
        b = bands.get(p.kind)
        if b is None or not b.checked:
            unchecked_s += p.seconds
            if p.name not in unchecked:
                unchecked.append(p.name)
            continue
        share = p.seconds / total
        median += share * float(b.median)  # type: ignore[arg-type]
        high += share * float(b.high)  # type: ignore[arg-type]
    return StepBand(median, high, unchecked_s / total, tuple(unchecked))
