"""What each M of an operator is expected to cost before anything is measured.

Two uses. The joint model's scale (:func:`model_scale`): the roofline bound, which no
tiling beats, so the model learns each config's ratio to it. And the time the mix
spends at each M (:func:`expected_time_s`), which places the tuning shapes and splits
the budget over the operators: the roofline's two terms summed (HBM traffic plus cube
work, and the launch head), the time of a kernel that hides neither under the other.
The bound alone is nearly flat over a decode's batches (memory bound up to the ridge),
while the measured optimum grows 1.5x from batch 1 to 256 and the spread between
configs grows with the compute a tiling must overlap; the sum follows that growth.
Without a roofline (the cpu backend) the work, the GEMM's flops, stands for both.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.kernel_set.operator_mix import OperatorMix
from aoe_optuna.operators.kinds.registry import GEMM
from aoe_optuna.spec.loader import StudySpec


def model_scale(spec: StudySpec, op: OperatorMix) -> Callable[[int], float]:
    """The latency at M the joint model's log ratio is taken against."""
    if spec.backend_kind.has_roofline():
        return lambda m: GEMM.bound_s(spec.profile, op.gemm(m))
    return lambda m: op.gemm(m).flops * 1e-12


def expected_time_s(spec: StudySpec, op: OperatorMix) -> np.ndarray:
    """Per M of ``op``, the time one run is expected to take (arbitrary unit without a
    roofline: only ratios between M and between operators are used)."""
    if not spec.backend_kind.has_roofline():
        return np.array([op.gemm(int(m)).flops * 1e-12 for m in op.m.tolist()])
    p = spec.profile
    out = []
    for m in op.m.tolist():
        g = op.gemm(int(m))
        out.append(g.flops / p.peak_flops(g.dtype) + g.min_bytes / p.hbm_bandwidth()
                   + KERNEL_LAUNCH_S)
    return np.array(out)
