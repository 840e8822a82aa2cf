"""The vector kernel a deployment calls, as a step's ``default`` charge prices it.

For RMSNorm, the fused add + RMSNorm and SwiGLU that is CANN's own kernel
(torch_npu's ``npu_rms_norm``, ``npu_add_rms_norm`` and ``npu_swiglu``), whose
host tiling and passes :mod:`.rms_norm`, :mod:`.add_rms_norm` and
:mod:`.swiglu` follow; for the kernels without such a model (rope, the
residual add of an unfused norm) it is the project's own kernel
(:mod:`aoe_optuna.aicore.vector.vector_ops`) at its default tiling. Tuning always works
in the project's kernel's space: a ``tuned`` kernel replaces this charge once an
operator run times it, where it is the faster of the two
(``operators.state.ShapeResult.library_kept``).
"""

from __future__ import annotations

from aoe_optuna.aicore.cann import add_rms_norm, rms_norm, swiglu
from aoe_optuna.aicore.vector.vector_ops import default_vector_cost
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.workload.vector_ops import VectorOp


def library_vector_seconds(profile: SocProfile, op: VectorOp) -> float:
    """Seconds of one call of ``op`` by the library kernel a deployment calls."""
    if op.kind == "rmsnorm":
        return rms_norm.rms_norm_seconds(profile, op.rows, op.width, op.dtype)
    if op.kind == "add_rmsnorm":  # the fused kernel, as a deployment calls it
        return add_rms_norm.add_rms_norm_seconds(profile, op.rows, op.width, op.dtype)
    if op.kind == "swiglu":  # the output row is one half of the input's
        return swiglu.swiglu_seconds(profile, op.rows, op.width, op.dtype)
    return default_vector_cost(profile, op)[1].total_s
