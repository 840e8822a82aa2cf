"""The distinct GEMM shapes of a workload, each the subject of a study of its own.

Several GEMMs of a step can share a shape (a model's o_proj and a bucket's
down_proj, or the same projection in two serving buckets): they share a
kernel and so a study, and the shape's weight in the step is the sum of their
counts. A shape's study is the user's spec with the workload narrowed to that
one GEMM, named ``<study>/<op>/<MxNxK>`` so the dashboard lists a model's
shapes together.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aoe_optuna.spec.loader import StudySpec, spec_from_dict
from aoe_optuna.workload.gemm import GemmKey
from aoe_optuna.workload.models import Gemm, Workload


@dataclass(frozen=True)
class OperatorShape:
    """One distinct (M, K, N, dtype, batch) of a workload and the GEMMs that run it."""

    M: int
    K: int
    N: int
    dtype: str
    names: tuple[str, ...]  # the workload's GEMM names of this shape
    weight: int  # runs per step: the sum of their counts
    batch: int = 1  # matrices of one batched launch

    @property
    def key(self) -> GemmKey:
        return self.gemm.key

    @property
    def gemm(self) -> Gemm:
        return Gemm(self.M, self.K, self.N, self.dtype, self.label, 1, self.batch)

    @property
    def label(self) -> str:
        """The GEMM's own name (``qkv_proj``), with ``+n`` when n others share the shape."""
        head = self.names[0].rsplit("/", 1)[-1]
        return head + (f"+{len(self.names) - 1}" if len(self.names) > 1 else "")

    @property
    def dims(self) -> str:
        """``MxNxK``: the order in which the dashboard's study names give the shape; a
        batched launch adds ``-b<batch>``."""
        return (f"{self.M}x{self.N}x{self.K}" + ("" if self.dtype == "fp16" else f"-{self.dtype}")
                + (f"-b{self.batch}" if self.batch > 1 else ""))

    def study_name(self, parent: str) -> str:
        return f"{parent}/{self.label}/{self.dims}"


def operator_shapes(workload: Workload) -> list[OperatorShape]:
    """The distinct shapes of ``workload`` in the order they first appear."""
    groups: dict[GemmKey, list[Gemm]] = {}
    for g in workload.gemms:
        groups.setdefault(g.key, []).append(g)
    return [OperatorShape(M=gs[0].M, K=gs[0].K, N=gs[0].N, dtype=gs[0].dtype,
                          names=tuple(g.name for g in gs), weight=sum(g.count for g in gs),
                          batch=gs[0].batch)
            for gs in groups.values()]


def shape_spec(spec: StudySpec, shape: OperatorShape) -> StudySpec:
    """The spec of one shape's study: the same space, backend and chip, one GEMM.

    The study's value is that GEMM's rows per second (M / latency); the
    operator tuner turns latencies back into the model's tokens/s.
    """
    doc: dict[str, Any] = copy.deepcopy(spec.canonical())
    gemm: dict[str, Any] = {"M": shape.M, "K": shape.K, "N": shape.N, "dtype": shape.dtype}
    if shape.batch > 1:
        gemm["batch"] = shape.batch
    doc["workload"] = {"gemm": gemm}
    doc["max_search_time"] = None  # the operator budget is the tuner's, not each study's
    doc["target_throughput"] = None
    return spec_from_dict(doc, source=f"{spec.source} [{shape.dims}]")


def step_latencies(workload: Workload, shapes: list[OperatorShape],
                   latency_of: Mapping[GemmKey, float]) -> dict[str, float]:
    """Each GEMM name's latency from its shape's latency: what Workload.step_time reads."""
    out: dict[str, float] = {}
    for shape in shapes:
        for name in shape.names:
            out[name] = latency_of[shape.key]
    return out
