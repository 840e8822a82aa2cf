"""What a kernel-set run's parent study holds: its operators' mixes, the shapes each is
measured at, and the mean step's tokens and fixed time, so that a resume, an export
or an evaluation needs only the storage and the study name.

The plan is written once (the first run's stays); a later run of the same name with
another mix is refused in one line before it measures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aoe_optuna.kernel_set.expected_time import expected_time_s
from aoe_optuna.kernel_set.operator_mix import MixSteps, OperatorMix
from aoe_optuna.kernel_set.tuning_shapes import tuning_shapes
from aoe_optuna.spec.loader import StudySpec


@dataclass(frozen=True)
class KernelSetPlan:
    source: str  # where the mix came from, in words
    operators: list[OperatorMix]
    tuned: list[np.ndarray]  # per operator, the M its measurements are taken at
    tokens_per_step: float | None = None  # of the mean step (None: no model)
    fixed_s: float | None = None

    @classmethod
    def of(cls, steps: MixSteps, source: str, shapes: int, spec: StudySpec) -> KernelSetPlan:
        """The mix's plan: each operator's tuning shapes by quantiles of its time."""
        return cls(source, steps.operators,
                   [tuning_shapes(op.m, op.weight, shapes, expected_time_s(spec, op))
                    for op in steps.operators],
                   steps.tokens_per_step, steps.fixed_s)

    def document(self) -> dict[str, Any]:
        """What identifies the plan (not its source's name: a resume may spell the path
        of the same file otherwise)."""
        return {"tokens_per_step": self.tokens_per_step, "fixed_s": self.fixed_s,
                "operators": [{"name": op.name, "K": op.K, "N": op.N, "dtype": op.dtype,
                               "batch": op.batch, "M": op.m.tolist(),
                               "weight": op.weight.tolist(), "tuning_shapes": t.tolist()}
                              for op, t in zip(self.operators, self.tuned, strict=True)]}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], source: str = "stored") -> KernelSetPlan:
        ops = [OperatorMix(o["name"], o["K"], o["N"], o["dtype"], o["batch"],
                           np.array(o["M"], dtype=np.int64), np.array(o["weight"], dtype=float))
               for o in doc["operators"]]
        tuned = [np.array(o["tuning_shapes"], dtype=np.int64) for o in doc["operators"]]
        return cls(source, ops, tuned, doc.get("tokens_per_step"), doc.get("fixed_s"))

    def max_kernels(self) -> int | None:
        """The most kernels a set of one operator can use: the most distinct M of one
        (None: no operator's M varies)."""
        counts = [len(op.m) for op in self.operators if op.varies]
        return max(counts) if counts else None
