"""Each GEMM operator of a serving mix and how often it runs at each M.

A kernel set is chosen per operator: a GEMM of fixed (K, N, dtype) whose M varies with
the batch (decode) or the prompt length (prefill). Its mix is the weight of each M:
the probability of each batch size or length times the operator's runs per step, so
the weighted latency of an operator is its share of the mean step time, and the
operators' sum is the GEMM time of a mean step.

Three sources give it:

* the spec's model at every value of a :class:`~aoe_optuna.workload.shape_mix.ShapeMix`
  (a range or a serving log; the model's step builder gives each GEMM's M);
* the spec's own workload (its serving buckets and their weights, or a shape list):
  its GEMMs grouped by (K, N, dtype), M and counts as they are;
* an msprof operator summary of a serving run: the MatMuls it saw, grouped likewise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aoe_optuna.spec.format import SpecError
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.spec.workload import model_architecture
from aoe_optuna.workload.forward import forward_workload
from aoe_optuna.workload.gemm import Gemm, Workload
from aoe_optuna.workload.msprof import read_op_summary
from aoe_optuna.workload.shape_mix import ShapeMix

OpKey = tuple[int, int, str, int]  # K, N, dtype, batch: one kernel's problem family


@dataclass(frozen=True)
class OperatorMix:
    """One GEMM operator (K, N, dtype, batch) and the weight of each M it runs at."""

    name: str  # the step's GEMM name (``qkv_proj``; ``+n`` when n others share it)
    K: int  # noqa: N815 - the GEMM's own names
    N: int  # noqa: N815
    dtype: str
    batch: int
    m: np.ndarray  # distinct M, ascending
    weight: np.ndarray  # runs per mean step at each M

    @property
    def key(self) -> OpKey:
        return (self.K, self.N, self.dtype, self.batch)

    @property
    def label(self) -> str:
        """``qkv_proj/4608x3584``: the operator and its N x K (catlass's order, M varies)."""
        tail = "" if self.dtype == "fp16" else f"-{self.dtype}"
        return f"{self.name}/{self.N}x{self.K}{tail}" + (
            f"-b{self.batch}" if self.batch > 1 else "")

    def gemm(self, m: int) -> Gemm:
        return Gemm(int(m), self.K, self.N, self.dtype, self.name, 1, self.batch)

    @property
    def varies(self) -> bool:
        """Whether M takes more than one value: a fixed-M operator gets one kernel."""
        return len(self.m) > 1

    def weight_of(self, m: np.ndarray) -> np.ndarray:
        """The mix's weight of each M in ``m`` (0 for an M the mix lacks)."""
        pos = np.searchsorted(self.m, m)
        hit = (pos < len(self.m)) & (self.m[np.minimum(pos, len(self.m) - 1)] == m)
        return np.where(hit, self.weight[np.minimum(pos, len(self.m) - 1)], 0.0)


def _grouped(points: Sequence[tuple[Gemm, float]]) -> list[OperatorMix]:
    """GEMMs (with the weight each carries) grouped into operators, in order of first sight."""
    names: dict[OpKey, list[str]] = {}
    weights: dict[OpKey, dict[int, float]] = {}
    for g, w in points:
        key = (g.K, g.N, g.dtype, g.batch)
        base = g.name.rsplit("/", 1)[-1]
        if base not in names.setdefault(key, []):
            names[key].append(base)
        by_m = weights.setdefault(key, {})
        by_m[g.M] = by_m.get(g.M, 0.0) + w
    out = []
    for key, by_m in weights.items():
        m = np.array(sorted(by_m), dtype=np.int64)
        label = names[key][0] + (f"+{len(names[key]) - 1}" if len(names[key]) > 1 else "")
        out.append(OperatorMix(label, key[0], key[1], key[2], key[3], m,
                               np.array([by_m[v] for v in m.tolist()], dtype=float)))
    return out


@dataclass(frozen=True)
class MixSteps:
    """A serving mix's operators, and of its mean step the tokens and the time the
    tiling does not change (None where the source has no model: a profile)."""

    operators: list[OperatorMix]
    tokens_per_step: float | None = None
    fixed_s: float | None = None


def from_model(spec: StudySpec, mix: ShapeMix) -> MixSteps:
    """The operators of the spec's model over ``mix``: its step at each batch size (or
    length), the other dimension as the spec gives it."""
    doc = spec.workload_doc or {}
    arch = model_architecture(doc, spec.source)
    if arch is None:
        raise SpecError(spec.source, "workload", "a model (model or hf_config) to build the "
                        f"step at each {mix.dim} of --mix", "a workload of fixed GEMMs")
    other = "seq_len" if mix.dim == "batch" else "batch"
    fixed = doc.get(other, 1024 if other == "seq_len" else 1)
    if isinstance(fixed, list):
        raise SpecError(spec.source, f"workload.{other}", f"one value: --mix varies "
                        f"{mix.dim}, and each of its steps takes the spec's {other}",
                        repr(fixed))
    points: list[tuple[Gemm, float]] = []
    tokens = fixed_s = 0.0
    for value, p in zip(mix.values.tolist(), mix.probabilities.tolist(), strict=True):
        batch, seq_len = (value, fixed) if mix.dim == "batch" else (fixed, value)
        step = forward_workload(spec.profile, arch, doc.get("phase", "decode"), batch,
                                seq_len, doc.get("tp", 1), doc.get("dtype", "fp16"))
        points += [(g, p * g.count) for g in step.gemms]
        tokens += p * step.tokens_per_step
        fixed_s += p * step.fixed_s
    return MixSteps(_grouped(points), tokens, fixed_s)


def from_workload(workload: Workload) -> MixSteps:
    """The operators of a spec's own workload: its buckets' GEMMs with their counts, per
    serving step (the sum of the buckets' weights; 1 without buckets)."""
    steps = sum(v for k, v in workload.details.items() if k.endswith("/weight")) or 1.0
    return MixSteps(_grouped([(g, g.count / steps) for g in workload.gemms]),
                    workload.tokens_per_step / steps, workload.fixed_s / steps)


def from_profile(path: str | Path, steps: int = 1) -> MixSteps:
    """The operators an msprof op_summary saw: each MatMul shape with its calls per step."""
    step = read_op_summary(path, steps=steps)
    return MixSteps(_grouped([(g, float(g.count)) for g in step.gemms]))
