"""Where a run builds ahead without ``--builders``: on the npu backend only, with the
host's cores minus one per device, and the timing's host program on a core of its own."""

from __future__ import annotations

import pytest

from aoe_optuna.backends.registry import backend_class
from aoe_optuna.study.run import build_pool, pool_default
from aoe_optuna.study.run.build_pool import PoolPlan
from aoe_optuna.study.run.pool_default import builders_for


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch):
    """Pretend this host has ``n`` usable cores."""
    def set_cores(n: int) -> None:
        monkeypatch.setattr(pool_default, "usable_cpus", lambda: list(range(n)))
        monkeypatch.setattr(build_pool, "usable_cpus", lambda: list(range(n)))
    return set_cores


@pytest.mark.parametrize("backend", ["simulator", "cpu", "replay"])
def test_backends_whose_results_a_pool_changes_build_in_turn_unless_asked(
        cores, backend: str) -> None:
    cores(16)
    assert builders_for(backend_class(backend), None) is None
    assert builders_for(backend_class(backend), 3) == 3


@pytest.mark.parametrize("n_cores, devices, builders", [
    (16, 1, 15),  # a host with one 910B2
    (192, 8, 23),  # an eight-card server: 184 builders, 23 per card's worker
    (2, 1, 1),
    (1, 1, None),  # no core to spare: build, then time
    (3, 2, None),  # one spare core cannot feed two cards' workers
])
def test_the_npu_builds_ahead_on_the_cores_minus_one_per_device(
        cores, n_cores: int, devices: int, builders: int | None) -> None:
    cores(n_cores)
    assert builders_for(backend_class("npu"), None, devices) == builders


def test_builders_zero_is_no_pool_on_any_backend(cores) -> None:
    cores(16)
    npu, cpu = backend_class("npu"), backend_class("cpu")
    assert builders_for(npu, 0) is None and builders_for(cpu, 0) is None


def test_a_cards_host_program_keeps_a_core_no_builder_uses(cores) -> None:
    cores(16)
    one = PoolPlan.for_host(15, "npu-0", 0, reserve=1)
    assert one.lease.device == "npu-0"
    assert one.timing_cpus == {15} and one.build_cpus == frozenset(range(15))
    eight = [PoolPlan.for_host(23, f"npu-{i}", i, reserve=8) for i in range(8)]
    assert {min(p.timing_cpus) for p in eight} == set(range(8, 16))  # one core per card
    assert all(p.build_cpus == frozenset(range(8)) for p in eight)
    assert not PoolPlan.for_host(1, "npu-0", 0, reserve=16).timing_cpus  # no core to keep
