"""The schedulers' choices on hand-made histories."""

import math

import pytest

from aoe_optuna.operators.scheduler import (
    GradientScheduler,
    RoundRobin,
    ShapeHistory,
    make_scheduler,
)


def h(weight: float, curve: list[float], roofline: float = 1.0, exhausted: bool = False):
    return ShapeHistory(weight=weight, roofline_s=roofline, best_s=curve, exhausted=exhausted)


def test_round_robin_takes_the_least_measured_open_shape():
    assert RoundRobin().warmup == GradientScheduler().warmup
    shapes = [h(1, [5.0] * 8), h(1, [5.0] * 4), h(1, [5.0] * 2, exhausted=True)]
    assert RoundRobin().next_shape(shapes) == 1
    assert RoundRobin().next_shape([h(1, [], exhausted=True)]) is None


def test_gradient_warms_every_shape_up_first_fewest_first():
    s = GradientScheduler(warmup=8, chunk=4)
    shapes = [h(100, [2.0] * 12), h(1, [2.0] * 3), h(1, [2.0] * 5)]
    assert s.next_shape(shapes) == 1
    # a shape without any successful measurement is still cold
    assert s.next_shape([h(100, [2.0] * 12), h(1, [math.inf] * 9)]) == 1


def test_gradient_prefers_the_shape_that_saves_most_step_time():
    s = GradientScheduler(warmup=2, chunk=2)
    flat = [4.0] * 10  # no recent progress
    heavy = h(28, flat, roofline=1.0)
    light = h(1, flat, roofline=1.0)
    assert s.next_shape([light, heavy]) == 1
    # the same weight: the one still improving wins
    improving = h(1, [8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 6.0, 5.0, 4.0])
    assert s.next_shape([light, improving]) == 1


def test_expected_drop_blends_backward_difference_and_forward_guess():
    s = GradientScheduler(warmup=1, chunk=2, alpha=0.2, beta=2.0)
    shape = h(1, [10.0, 10.0, 9.0, 8.0], roofline=4.0)
    # backward: best 2 measurements earlier (index 1) = 10, now 8 -> 2
    # forward: the headroom's rate (8 - 4) * 2 / 4 = 2; not lagging (8 - 2 * 4 / 0.8 < 0)
    assert s.expected_drop(shape, best_fraction=0.8) == pytest.approx(0.2 * 2 + 0.8 * 2)
    # as slow, but near its roofline: less to expect
    near = h(1, [10.0, 10.0, 9.0, 8.0], roofline=7.5)
    assert s.expected_drop(near, best_fraction=0.8) < s.expected_drop(shape, best_fraction=0.8)
    # a shape far below its group's best fraction expects to catch up, never past the roofline
    lagging = h(1, [100.0] * 4, roofline=4.0)  # 4% of roofline; the group reached 80%
    assert s.expected_drop(lagging, best_fraction=0.8) == pytest.approx(0.8 * (100 - 10))
    assert s.expected_drop(h(1, [4.0] * 4, roofline=4.0), best_fraction=1.0) == 0.0


def test_expected_gain_never_exceeds_what_the_shape_can_still_gain():
    s = GradientScheduler(warmup=2, chunk=2)
    # a big last drop that landed next to the roofline: 0.1 s left, not 0.2 * 15.9 s
    landed = h(10, [20.0, 20.0, 20.0, 4.1], roofline=4.0)
    assert s.expected_drop(landed, best_fraction=1.0) == pytest.approx(0.1)
    assert s.expected_gain(landed, best_fraction=1.0) == pytest.approx(10 * 0.1)
    # so a shape with real headroom gets the next chunk
    open_ = h(1, [7.0, 7.0, 7.0, 7.0], roofline=4.0)
    assert s.next_shape([landed, open_]) == 1


def test_a_lagging_shape_gets_the_chunk_over_a_heavier_one_that_is_near_its_best():
    s = GradientScheduler(warmup=2, chunk=2)
    near = h(10, [1.25] * 40, roofline=1.0)  # 80% of roofline, no progress for long
    behind = h(1, [20.0] * 10, roofline=1.0)  # 5%: what the others reached says it can do better
    assert s.next_shape([near, behind]) == 1


def test_best_fraction_is_taken_per_group():
    shapes = [h(1, [2.0], roofline=1.0), h(1, [1.25], roofline=1.0)]
    shapes[1].group = "fp16/compute"
    assert GradientScheduler.best_fractions(shapes) == {"": 0.5, "fp16/compute": 0.8}


def test_make_scheduler_names():
    assert make_scheduler("round-robin").name == "round-robin"
    assert make_scheduler("gradient", chunk=6).chunk == 6
    with pytest.raises(ValueError, match="scheduler: expected one of"):
        make_scheduler("ansor")


def test_a_launch_bound_moe_expert_does_not_take_the_chunks_of_a_lagging_projection():
    """Qwen3-30B-A3B decode at batch 1, the simulator's figures: the expert GEMM sits at
    its optimum (10.21 us) with 1 us of roofline under 7.8 us of launch; o_proj lags its
    optimum (24.25 against 18.93 us). Aimed at its roofline alone, the expert (384 calls
    a step) kept every chunk (140 of 200 measurements)."""
    from aoe_optuna.hardware.profile import load_profile
    from aoe_optuna.operators.shapes import OperatorShape

    profile = load_profile("Ascend910B2")
    expert = OperatorShape(1, 768, 2048, "fp16", ("experts_down_proj",), 384)
    o_proj = OperatorShape(1, 4096, 2048, "fp16", ("o_proj",), 48)
    assert expert.bound_s(profile) > 4 * expert.roofline_s(profile)  # the launch dominates
    s = GradientScheduler(warmup=8, chunk=4)
    shapes = [ShapeHistory(weight=expert.weight, roofline_s=expert.bound_s(profile),
                           best_s=[10.21e-6] * 40),
              ShapeHistory(weight=o_proj.weight, roofline_s=o_proj.bound_s(profile),
                           best_s=[24.25e-6] * 8)]
    assert s.next_shape(shapes) == 1
