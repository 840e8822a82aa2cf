"""The distinct GEMM shapes of a workload, each the subject of a study of its own, and
what every operator of a run (a GEMM shape here, attention or a vector kernel in
:mod:`.layer_ops`) tells the tuner.

Several GEMMs of a step can share a shape (a model's o_proj and a bucket's
down_proj, or the same projection in two serving buckets): they share a
kernel and so a study, and the shape's weight in the step is the sum of their
counts. A shape's study is the user's spec with the workload narrowed to that
one GEMM, named ``<study>/<op>/<MxNxK>`` so the dashboard lists a model's
shapes together.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.operators.kinds.gemm import GemmKind
from aoe_optuna.operators.kinds.protocol import OperatorKind
from aoe_optuna.operators.kinds.registry import GEMM
from aoe_optuna.spec.loader import StudySpec, spec_from_dict
from aoe_optuna.workload.gemm import Gemm, GemmKey, Workload


class Operator(Protocol):
    """One distinct problem of a step, tuned in a study of its own.

    ``names`` are the workload's names of the calls that run it (the keys
    :meth:`Workload.step_time` reads), ``weight`` their runs per step.
    """

    names: tuple[str, ...]
    weight: int
    dtype: str
    operator_kind: OperatorKind  # what differs between problems is asked of it

    @property
    def kind(self) -> str: ...  # "gemm", "attention", "rmsnorm", ...
    @property
    def key(self) -> Hashable: ...
    @property
    def label(self) -> str: ...
    @property
    def dims(self) -> str: ...
    def study_name(self, parent: str) -> str: ...
    def roofline_s(self, profile: SocProfile) -> float: ...
    def bound_s(self, profile: SocProfile) -> float: ...  # what the scheduler aims at
    def flops(self) -> float | None: ...  # None where FLOPs say nothing (a vector kernel)
    def plan_entry(self, parent: str) -> dict[str, Any]: ...
    def group(self, profile: SocProfile) -> str: ...  # operators whose roofline fractions compare
    def warm_doc(self) -> tuple[str, dict[str, Any]] | None:
        """The op its seeds are filed under and its problem's fields
        (:mod:`.warm_start`); None for an operator that takes no seeds."""
        ...


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
    operator_kind: ClassVar[GemmKind] = GEMM

    @property
    def kind(self) -> str:
        return self.operator_kind.name

    @property
    def key(self) -> GemmKey:
        return self.gemm.key

    def roofline_s(self, profile: SocProfile) -> float:
        return self.operator_kind.roofline_s(profile, self.gemm)

    def bound_s(self, profile: SocProfile) -> float:
        return self.operator_kind.bound_s(profile, self.gemm)

    def flops(self) -> float:
        return self.operator_kind.flops(self.gemm)

    def group(self, profile: SocProfile) -> str:
        return self.operator_kind.group(profile, self.gemm)

    def warm_doc(self) -> tuple[str, dict[str, Any]]:
        """Every GEMM of the run's op is one family: its sizes (M, K, N)."""
        return self.operator_kind.name, {"M": self.M, "K": self.K, "N": self.N}

    def plan_entry(self, parent: str) -> dict[str, Any]:
        """What the parent study's plan records of it (unchanged since GEMM-only plans;
        a batched launch adds its batch)."""
        entry = {"study": self.study_name(parent), "M": self.M, "K": self.K, "N": self.N,
                 "dtype": self.dtype, "names": list(self.names), "weight": self.weight}
        return entry if self.batch == 1 else {**entry, "batch": self.batch}

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
        """``MxNxK`` (the order of the dashboard's study names), as the kind writes it."""
        return self.operator_kind.dims(self.gemm)

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


def step_latencies(workload: Workload, shapes: Sequence[Operator],
                   latency_of: Mapping[Any, float]) -> dict[str, float]:
    """Each call's latency from its operator's latency: what Workload.step_time reads."""
    out: dict[str, float] = {}
    for shape in shapes:
        for name in shape.names:
            out[name] = latency_of[shape.key]
    return out
