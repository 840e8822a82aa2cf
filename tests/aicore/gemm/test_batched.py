"""A batched GEMM is one launch whose blocks (batch x one matrix's grid) fill the cores."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.workload.gemm import Gemm
from tests.aicore.gemm.seed_fixtures import one


def test_batch_one_is_the_plain_gemm_bit_for_bit(model, seed):
    plain = model.latency(seed, Gemm(16, 3584, 4608))
    assert np.array_equal(plain, model.latency(seed, Gemm(16, 3584, 4608, batch=1)),
                          equal_nan=True)


def test_a_batched_launch_fills_the_cores_the_per_matrix_launches_left_idle(model, profile):
    # MLA's absorbed Q projection of DeepSeek-V2-Lite decode: 16 heads of 1 x 128 x 512
    head = Gemm(1, 128, 512)
    batched = Gemm(1, 128, 512, batch=16)
    per_head = one(model, head)
    together = one(model, batched)
    assert together < 16 * per_head / 4  # one launch head, and 32 blocks on 24 cores
    assert together > per_head  # still more work than one matrix
    # flops, bytes and roofline count every matrix
    assert batched.flops == 16 * head.flops and batched.min_bytes == 16 * head.min_bytes
    assert batched.roofline_s(profile) == pytest.approx(16 * head.roofline_s(profile))
    assert together >= batched.roofline_s(profile)


def test_more_matrices_than_cores_take_more_waves(model):
    small, large = one(model, Gemm(1, 128, 256, batch=24)), one(model, Gemm(1, 128, 256, batch=48))
    assert large > small  # 48 one-block matrices on 24 cores: two rounds
