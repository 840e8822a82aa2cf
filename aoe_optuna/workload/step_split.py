"""Where a step's time goes: GEMMs, attention, vector kernels, communication.

A user reading tokens/s should see which part of the step it rests on and
which parts are modelled rather than charged at their roofline. The GEMMs are
taken at their roofline (their tuned times come from measurements); the other
parts at what the workload charges, with the roofline beside a modelled part.
A merged serving workload sums its buckets, each times its weight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.workload.gemm import Workload

PARTS = {"attention": "attention_s", "vector": "elementwise_s", "communication": "comm_s"}


@dataclass(frozen=True)
class Part:
    name: str
    seconds: float
    roofline_s: float | None  # set when the part is modelled, not charged at its roofline


def _weighted(workload: Workload, key: str) -> float | None:
    """``details[key]``, or the weighted sum of every bucket's ``<label>/key``."""
    d = workload.details
    if key in d:
        return d[key]
    found = [(k[: -len(key) - 1], v) for k, v in d.items() if k.endswith("/" + key)]
    if not found:
        return None
    return sum(v * d.get(f"{label}/weight", 1.0) for label, v in found)


def step_split(workload: Workload, profile: SocProfile) -> list[Part]:
    """The step's parts; what ``fixed_s`` holds beyond the named ones is ``other``."""
    parts = [Part("GEMMs", sum(g.count * g.roofline_s(profile) for g in workload.gemms), None)]
    named = 0.0
    for name, key in PARTS.items():
        seconds = _weighted(workload, key)
        if seconds is None:
            continue
        named += seconds
        roof = _weighted(workload, key.removesuffix("_s") + "_roofline_s")
        parts.append(Part(name, seconds, roof))
    if workload.fixed_s - named > 1e-12:
        parts.append(Part("other", workload.fixed_s - named, None))
    return parts


def describe_split(parts: list[Part]) -> str:
    """``GEMMs 8.43 ms (69%), vector 1.26 ms (10%, modelled; roofline charge 0.21 ms)``"""
    total = sum(p.seconds for p in parts) or 1.0
    out = []
    for p in parts:
        text = _time_and_share(p, total)
        if p.roofline_s is not None:
            text += f", modelled; roofline charge {p.roofline_s * 1e3:.3g} ms"
        out.append(text + ")")
    return ", ".join(out)


def tuned_split(workload: Workload, profile: SocProfile,
                latencies: Mapping[str, float]) -> list[Part]:
    """The step's parts with an operator run's latencies (one per GEMM name, and per
    layer operator name where tuned): each part with its roofline beside it.

    A tuned attention or vector call replaces its charge in its part; a part
    charged at its roofline is its own roofline.
    """
    gemm_s = sum(g.count * latencies[g.name] for g in workload.gemms)
    delta: dict[str, float] = {}
    for op in workload.layer_ops:
        if op.name in latencies:
            delta[op.part] = delta.get(op.part, 0.0) + op.count * (latencies[op.name]
                                                                     - op.charged_s)
    out = []
    for p in step_split(workload, profile):
        if p.name == "GEMMs":
            out.append(Part(p.name, gemm_s, p.seconds))
        else:
            roof = p.roofline_s if p.roofline_s is not None else p.seconds
            out.append(Part(p.name, p.seconds + delta.get(p.name, 0.0), roof))
    return out


def describe_fractions(parts: list[Part]) -> str:
    """``GEMMs 8.43 ms (69%, 91% of roofline), attention 0.22 ms (1.8%, 17% of roofline)``"""
    total = sum(p.seconds for p in parts) or 1.0
    out = []
    for p in parts:
        text = _time_and_share(p, total)
        if p.roofline_s is not None and p.seconds > 0:
            fraction = p.roofline_s / p.seconds
            text += f", {fraction:.0%} of roofline" if fraction >= 0.1 else \
                f", {fraction:.1%} of roofline"
        out.append(text + ")")
    return ", ".join(out)


def _time_and_share(p: Part, total: float) -> str:
    """``attention 0.22 ms (1.8%``: the part's time and share of the step, left open."""
    share = p.seconds / total
    digits = ".0%" if share >= 0.1 or share == 0 else ".1%"
    return f"{p.name} {p.seconds * 1e3:.3g} ms ({share:{digits}}"
