"""The vector kernels' tiling space: UB capacity, core counts, the per-step kernel list."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.architecture import Architecture, LatentAttention
from aoe_optuna.workload.hf_config import read_hf_config
from aoe_optuna.workload.models import builtin_architecture
from aoe_optuna.workload.vector_ops import VectorOp, step_vector_ops
from aoe_optuna.workload.vector_space import default_config, ub_bytes, vector_space

from .conftest import MODELS_DIR

PROFILE = load_profile("Ascend910B2")
OPS = [VectorOp("add_rmsnorm", 64, 3584), VectorOp("rmsnorm", 1, 3584),
       VectorOp("swiglu", 4096, 18944), VectorOp("rope", 64, 4096)]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.label)
def test_every_enumerated_or_sampled_config_fits_ub_and_the_cores(op: VectorOp) -> None:
    space = vector_space(PROFILE, op)
    for idx in (space.all_feasible(),
                space.sample_feasible(50, np.random.default_rng(0))):
        cols = space.columns(idx)
        assert len(idx) > 0
        assert (ub_bytes(op, cols) <= PROFILE.ub_bytes).all()
        assert (cols["cores"] <= PROFILE.vector_cores).all()
        assert all(not space.explain(c) for c in space.configs(idx))
    assert space.n_feasible < space.size  # the rules do refuse part of the product


def test_a_tile_over_ub_is_refused_with_the_bytes_it_needs() -> None:
    op = VectorOp("add_rmsnorm", 64, 3584)
    space = vector_space(PROFILE, op)
    big = {"tile_len": 16384, "cores": 16, "double_buffer": 1, "fused": 1}
    # 4 row tensors x 2 B x 2 buffers + 2 fp32 working tiles: 24 B per element
    assert ub_bytes(op, space.columns(space.index(big)[None, :]))[0] == 16384 * 24
    assert any(line.startswith("UB: needs") for line in space.explain(big))
    assert not space.explain({**big, "double_buffer": 0, "tile_len": 8192})


def test_a_norm_never_gets_more_cores_than_rows() -> None:
    space = vector_space(PROFILE, VectorOp("rmsnorm", 2, 3584))
    assert set(space.columns(space.all_feasible())["cores"]) == {1, 2}
    # an elementwise kernel shares tiles, so one long row can use many cores
    wide = vector_space(PROFILE, VectorOp("swiglu", 1, 18944))
    assert max(wide.columns(wide.all_feasible())["cores"]) >= 32


def test_the_default_uses_every_core_with_work_double_buffered_and_fused() -> None:
    config = default_config(PROFILE, VectorOp("add_rmsnorm", 4096, 3584))
    assert config == {"tile_len": 8192, "cores": 48, "double_buffer": 1, "fused": 1}
    assert default_config(PROFILE, VectorOp("rmsnorm", 1, 3584))["cores"] == 1


def test_step_vector_ops_counts_two_norms_a_swiglu_and_a_rope_per_layer() -> None:
    arch = builtin_architecture("qwen2.5-7b")
    ops = {op.kind: (op, n) for op, n in step_vector_ops(arch, "decode", 8, 1024, 2, "fp16")}
    # every norm but the first layer's input norm follows a residual add
    assert ops["add_rmsnorm"][1] == 2 * arch.layers - 1
    assert ops["rmsnorm"][1] == 2
    swiglu, n = ops["swiglu"]
    assert (swiglu.rows, swiglu.width, n) == (8, arch.intermediate // 2, arch.layers)
    rope, _ = ops["rope"]
    assert rope.width == (arch.q_heads + arch.kv_heads) * arch.head_dim // 2
    prefill = dict((op.kind, op) for op, _ in step_vector_ops(arch, "prefill", 2, 512, 1, "fp16"))
    assert prefill["swiglu"].rows == 1024


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="kind: expected one of"):
        VectorOp("layernorm", 1, 128)



def test_a_moe_layer_runs_swiglu_over_its_routed_and_shared_widths() -> None:
    arch, _ = read_hf_config(MODELS_DIR / "qwen3-30b-a3b.json")
    assert arch.experts is not None
    e = arch.experts
    widths = {op.width for op, _ in step_vector_ops(arch, "decode", 2, 256, 2, "fp16")
              if op.kind == "swiglu"}
    assert widths == {(e.per_token * e.intermediate + e.shared_intermediate) // 2}


def test_latent_attention_rotates_only_its_rope_dimensions() -> None:
    mla = LatentAttention(q_lora_rank=0, kv_lora_rank=512, qk_nope_head_dim=128,
                          qk_rope_head_dim=64, v_head_dim=128)
    arch = Architecture("mla", hidden=2048, intermediate=10944, layers=27, q_heads=16,
                        kv_heads=16, head_dim=192, vocab=102400, mla=mla)
    rope = next(op for op, _ in step_vector_ops(arch, "decode", 1, 128, 2, "fp16")
                if op.kind == "rope")
    assert (rope.width, rope.head_dim) == ((16 // 2 + 1) * 64, 64)  # local heads + shared key
