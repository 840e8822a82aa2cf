"""CANN's library matmul queues A and B in L1 on their own: its depths, and what that prices."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.aicore.gemm import library_l1, pipeline
from aoe_optuna.aicore.gemm.model import GemmModel
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config, to_code
from aoe_optuna.workload.gemm import Gemm

L1 = 524288


def _depths(tm: int, tn: int, tk: int, elem: int, k: int = 4096) -> tuple[float, float]:
    a, b = library_l1.queue_depths(L1, np.array([float(tm)]), np.array([float(tn)]),
                                   np.array([float(tk)]), np.array([float(elem)]), k)
    return float(a[0]), float(b[0])


def test_the_910b_base_block_queues_a_twice_as_deep_as_b() -> None:
    # CalL1Tiling on 128 x 256 fp16, baseK 64: depthA1 16, depthB1 8, so stepKa 8, stepKb 4
    assert _depths(128, 256, 64, 2) == (512.0, 256.0)
    assert _depths(256, 128, 64, 2) == (256.0, 512.0)  # the transposed base: B the deeper
    assert _depths(64, 64, 64, 2) == (1024.0, 1024.0)  # small bases: both deep alike
    assert _depths(16, 256, 64, 2, k=1024) == (1024.0, 256.0)  # never deeper than K


def test_an_operand_queue_of_its_own_never_waits_longer_than_one_joint_stage() -> None:
    rng = np.random.default_rng(0)
    compute, load_a, load_b = (rng.uniform(200, 3000, 500) for _ in range(3))
    lat = np.full(500, 803.0)
    depth = np.full(500, 256.0)
    own = pipeline.own_queues_period_cycles(compute, load_a, load_b, lat, depth, depth, depth)
    joint = pipeline.stage_period_cycles(np.full(500, 2), np.ones(500), np.full(500, 4.0), lat,
                                         load_a + load_b, compute)
    assert np.all(own <= joint + 1e-9)
    assert np.all(own >= np.maximum(compute, load_a + load_b) - 1e-9)
    assert np.any(own < joint - 100)  # where the joint stage waited on its start-up


@pytest.mark.parametrize("size", [2048, 4096])
def test_the_library_kernel_is_cube_bound_where_a_joint_stage_waits_on_its_loads(
        size: int) -> None:
    profile = load_profile("Ascend910B2")
    cols = {k: np.array([to_code(k, v)]) for k, v in
            {**default_config(), "tile_m": 128, "tile_n": 256, "tile_k": 64}.items()}
    gemm = Gemm(size, size, size, dtype="fp16")
    joint = float(GemmModel(profile, warm_l2=True).latency(cols, gemm)[0])
    model = GemmModel(profile, warm_l2=True, library_l1=True)
    library = float(model.latency(cols, gemm)[0])
    blocks = (size // 128) * (size // 256)
    rounds = -(-blocks // profile.cube_cores)
    cube_s = rounds * 128 * 256 * size / (16 * 16 * 16) / profile.clock_hz
    assert library < joint
    assert cube_s < library - model.launch_s < 1.2 * cube_s  # the cube's rounds and fills
