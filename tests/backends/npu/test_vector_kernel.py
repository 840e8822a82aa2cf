"""The Ascend C vector kernel rendered with a tuned tiling: each declaration read back,
and the configs and problems it cannot run refused in one line."""

from __future__ import annotations

import re

import pytest

from aoe_optuna.backends.npu.layer_kernels.vector_kernel import KIND_CODES, render_vector_kernel
from aoe_optuna.backends.npu.sources import RenderError
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.vector_ops import VectorOp
from aoe_optuna.workload.vector_space import vector_space

PROFILE = load_profile("Ascend910B2")


def declarations(text: str) -> dict[str, str]:
    found = re.findall(r"^constexpr \w+ ([A-Z_]+) = ([\w.]+);", text, flags=re.MULTILINE)
    found += re.findall(r"^using (InputT) = (\w+);", text, flags=re.MULTILINE)
    return dict(found)


@pytest.mark.parametrize("op", [VectorOp("rmsnorm", 16, 4096),
                                VectorOp("add_rmsnorm", 16, 3584, "bf16"),
                                VectorOp("swiglu", 16, 18944),
                                VectorOp("rope", 16, 4608, "fp16", 128)])
def test_every_feasible_config_is_written_into_the_kernel(op: VectorOp) -> None:
    space = vector_space(PROFILE, op)
    configs = space.configs(space.all_feasible())
    assert configs
    for config in configs[:: max(1, len(configs) // 12)]:
        got = declarations(render_vector_kernel(op, config, PROFILE))
        assert int(got["TILE_LEN"]) == config["tile_len"]
        assert int(got["CORES"]) == config["cores"]
        assert int(got["BUFFER_NUM"]) == (2 if config["double_buffer"] else 1)
        assert got["FUSED"] == ("false" if config.get("fused", 1) == 0 else "true")
        assert int(got["KIND"]) == KIND_CODES[op.kind]
        assert int(got["WIDTH"]) == op.width and int(got["HEAD_DIM"]) == op.head_dim
        assert int(got["UB_BYTES"]) == PROFILE.ub_bytes
        assert got["InputT"] == ("bfloat16_t" if op.dtype == "bf16" else "half")


@pytest.mark.parametrize(("op", "config", "message"), [
    (VectorOp("rmsnorm", 8, 4096), {"tile_len": 16384, "cores": 8, "double_buffer": 1},
     "rmsnorm 8x4096: UB: needs 256 KiB, has 192 KiB"),
    (VectorOp("rmsnorm", 8, 4096), {"tile_len": 1024, "cores": 16, "double_buffer": 1},
     "cores_units: 16 cores for 8 units of work"),
    (VectorOp("rmsnorm", 8, 4096), {"tile_len": 1000, "cores": 8, "double_buffer": 1},
     "tile_len"),
    (VectorOp("add_rmsnorm", 8, 4096), {"tile_len": 1024, "cores": 8, "double_buffer": 1},
     "config lacks ['fused']"),
    (VectorOp("swiglu", 8, 4100), {"tile_len": 1024, "cores": 8, "double_buffer": 1},
     "width 4100 is not a multiple of 16"),
    (VectorOp("rope", 8, 4096, "fp16", 48), {"tile_len": 1024, "cores": 8, "double_buffer": 1},
     "rope needs whole heads of a multiple of 32 (head_dim 48)"),
    (VectorOp("add", 8, 4096), {"tile_len": 1024, "cores": 8, "double_buffer": 1},
     "vector kernel 'add'"),
])
def test_what_the_kernel_cannot_run_is_one_line(op: VectorOp, config: dict, message: str) -> None:
    with pytest.raises(RenderError, match=re.escape(message)) as err:
        render_vector_kernel(op, config, PROFILE)
    assert "\n" not in str(err.value)
