"""forward.py charges the vector kernels with a model when one is passed."""

from __future__ import annotations

from aoe_optuna.aicore.pipes.launch import KERNEL_LAUNCH_S
from aoe_optuna.aicore.vector.vector_ops import default_vector_cost
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.forward import forward_workload
from aoe_optuna.workload.models import builtin_architecture
from aoe_optuna.workload.vector_ops import VectorOp

PROFILE = load_profile("Ascend910B2")
ARCH = builtin_architecture("qwen2.5-7b")


def test_every_vector_kernel_of_the_step_is_charged_once_per_launch() -> None:
    calls: list[VectorOp] = []

    def one_second(op: VectorOp) -> float:
        calls.append(op)
        return 1.0

    wl = forward_workload(PROFILE, ARCH, "decode", 4, 1024, vector_model=one_second)
    # two add + RMSNorms, a rope and a SwiGLU per layer, and the final norm
    assert wl.details["elementwise_s"] == 4 * ARCH.layers + 1
    assert sorted(op.kind for op in calls) == ["add_rmsnorm", "rmsnorm", "rope", "swiglu"]
    assert all(op.rows == 4 for op in calls)


def test_the_modelled_default_kernels_cost_more_than_the_roofline() -> None:
    roof = forward_workload(PROFILE, ARCH, "decode", 1, 1024)
    modelled = forward_workload(PROFILE, ARCH, "decode", 1, 1024,
                                vector_model=lambda op: default_vector_cost(PROFILE, op)[1].total_s)
    assert modelled.details["elementwise_roofline_s"] == roof.details["elementwise_s"]
    # at batch 1 every one of the 4L+1 launches pays at least the launch head
    assert modelled.details["elementwise_s"] >= (4 * ARCH.layers + 1) * KERNEL_LAUNCH_S
    assert modelled.roofline_tokens_per_s(PROFILE) < roof.roofline_tokens_per_s(PROFILE)
    assert modelled.gemms == roof.gemms
