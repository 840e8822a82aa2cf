"""The timing clock: wall time counts waiting, the thread's CPU time counts running."""

from __future__ import annotations

import time

from aoe_optuna.backends.timing import TimingPolicy, time_call

POLICY = TimingPolicy(warmup=0, min_repeats=3, max_repeats=3, max_seconds=5.0)


def wait() -> None:
    time.sleep(0.02)  # a thread off its core: what a loaded host does to a kernel


def spin() -> None:
    end = time.thread_time() + 0.01
    while time.thread_time() < end:
        pass


def test_time_off_the_core_counts_on_the_wall_clock_only() -> None:
    assert time_call(wait, POLICY).median_s >= 0.02
    assert time_call(wait, POLICY, clock="thread_cpu").median_s < 0.005


def test_a_computing_call_is_timed_alike_by_both_clocks_where_it_keeps_its_core() -> None:
    cpu = time_call(spin, POLICY, clock="thread_cpu").median_s
    wall = time_call(spin, POLICY).median_s
    # wall counts any wait for the core as well; the two are separate calls, each
    # overshooting its 10 ms of spin by up to a clock tick, hence the 5%
    assert 0.01 <= cpu <= wall * 1.05
