"""AscendSimulator: the simulator backend, the embedded default, a face over the AI
Core's models (:mod:`aoe_optuna.aicore`).

It reads a spec's ``backend`` options, times a GEMM config with
:class:`~aoe_optuna.aicore.gemm.model.GemmModel` and adds what a measurement on the
chip would add (:mod:`.measurement_effects`): noise, its cost, hidden failures and int8
accuracy. ``latency`` is vectorised over configs (numpy columns, see
:mod:`aoe_optuna.space.params`) and noise-free; ``measure`` runs one config the way the
objective does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aoe_optuna.aicore.gemm.model import GemmModel, complete_columns
from aoe_optuna.backends.base import BackendBase, Measurement
from aoe_optuna.backends.build_time import build_time
from aoe_optuna.backends.simulator import measurement_effects as measure
from aoe_optuna.hardware.capacity import element_bytes, hardware_rules, l1_stages, l1_tile_k
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.params import KNOWN_PARAMS, canonical_value, default_config, to_code
from aoe_optuna.workload.gemm import Gemm

DEFAULT_HIDDEN_RESERVE_KIB = 128  # hidden_failures=true: L1 the host tiling keeps back

_OPTIONS = ("noise, seed, hidden_failures, build_s, run_s, warmup, repeats, "
            "mmad_startup_cycles, launch_us, warm_l2")


@dataclass(frozen=True)
class MeasurementPlan:
    """How a simulated measurement is charged: build seconds, warm-up and timed runs."""

    # one build of a GEMM kernel on one host core (backends/build_time.py: assumed)
    build_s: float = build_time("gemm", "seed").seconds
    warmup: int = 10
    repeats: int = 100
    run_s: float = 0.0  # a measured config's host program: start, ACL init, copies


class AscendSimulator(BackendBase):
    """Measures GEMM configs on the AI Core's model: its latency, with a measurement's
    noise, cost and failures."""

    name = "simulator"
    exact_model = True
    layer_kernels = "model"  # the layer kinds' models (operators/kinds)

    @classmethod
    def timing_noise(cls, options: Mapping[str, Any]) -> float | None:
        """The ``noise`` option: a noise-free model has nothing to re-time."""
        return float(options.get("noise", 0.0)) or None

    def __init__(
        self,
        profile: SocProfile,
        noise: float = 0.0,
        seed: int = 0,
        *,
        hidden_failures: bool | float = False,
        build_s: float = MeasurementPlan.build_s,
        run_s: float = MeasurementPlan.run_s,
        warmup: int = MeasurementPlan.warmup,
        repeats: int = MeasurementPlan.repeats,
        mmad_startup_cycles: float | None = None,
        launch_us: float | None = None,
        warm_l2: bool = False,
    ) -> None:
        self.profile = profile
        self.noise = _number("noise", noise, low=0.0, high=1.0)
        self.seed = _integer("seed", seed, low=0)
        self.hidden_reserve_bytes = _hidden_reserve(hidden_failures)
        self.plan = MeasurementPlan(
            build_s=_number("build_s", build_s, low=0.0),
            warmup=_integer("warmup", warmup, low=0),
            repeats=_integer("repeats", repeats, low=1),
            run_s=_number("run_s", run_s, low=0.0),
        )
        launch_s = (None if launch_us is None
                    else _number("launch_us", launch_us, low=0.0) * 1e-6)
        if not isinstance(warm_l2, bool):
            raise ValueError(f"warm_l2: expected true or false, got {warm_l2!r}")
        # Tiling constants are compile-time, shapes run-time: one build serves every
        # GEMM of a workload, as the cpu/npu backends' build caches make it on hardware.
        self._built: set[tuple[tuple[str, Any], ...]] = set()
        self.model = GemmModel(
            profile, launch_s=launch_s, warm_l2=warm_l2,
            mmad_startup_cycles=(None if mmad_startup_cycles is None else
                                 _number("mmad_startup_cycles", mmad_startup_cycles, low=0.0)))

    @classmethod
    def from_options(cls, options: Mapping[str, Any], profile: SocProfile) -> AscendSimulator:
        """Build from a spec's backend section (without ``name``)."""
        unknown = [k for k in options if k not in _OPTIONS.split(", ")]
        if unknown:
            raise ValueError(f"{unknown[0]}: expected one of the simulator options "
                             f"({_OPTIONS}), got an unknown option")
        return cls(profile, **dict(options))

    def latency(self, columns: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        """Noise-free latency (s) of each config row.

        NaN where a hardware rule is broken, and, with ``hidden_failures`` on,
        where GetTiling would refuse the config: neither can be measured.
        """
        cols = complete_columns(columns)
        seconds = self.model.seconds(cols, gemm)
        ok = ~self.hidden_failures(cols, gemm) & self.model.feasible(cols, gemm)
        return np.where(ok, seconds, np.nan)

    def hidden_failures(self, columns: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        """True where GetTiling would refuse a config the known rules accept."""
        cols = complete_columns(columns)
        n = len(next(iter(cols.values())))
        if self.hidden_reserve_bytes is None:
            return np.zeros(n, dtype=bool)
        need = ((cols["tile_m"] + cols["tile_n"]) * l1_tile_k(cols, self.profile)
                * element_bytes(cols, gemm.dtype) * l1_stages(cols))
        return measure.hidden_l1_failures(need, self.profile.l1_bytes, self.hidden_reserve_bytes)

    def measure(self, config: Mapping[str, Any], gemm: Gemm) -> Measurement:
        """One config as the objective sees it: failure, or a noisy latency and its cost."""
        return self._measure(config, gemm, draw=0)

    def remeasure(self, config: Mapping[str, Any], gemm: Gemm, draw: int) -> Measurement:
        """The same config timed again: noise draw ``draw`` (the first timing is draw 0)."""
        return self._measure(config, gemm, draw=draw)

    def _measure(self, config: Mapping[str, Any], gemm: Gemm, draw: int) -> Measurement:
        full = {k: canonical_value(k, v) if k in KNOWN_PARAMS else v
                for k, v in {**default_config(), **dict(config)}.items()}
        cols = {k: np.array([to_code(k, v)]) for k, v in full.items() if k in KNOWN_PARAMS}
        broken = [r.describe(cols) for r in hardware_rules(self.profile, gemm.dtype)
                  if np.asarray(r.violation(cols))[0] > 0]
        if broken:
            return Measurement.failure("infeasible", "; ".join(broken))
        if self.hidden_failures(cols, gemm)[0]:
            reserve = self.hidden_reserve_bytes or 0
            return Measurement.failure(
                "build",
                f"GetTiling returned -1: L1 blocks leave less than the {reserve // 1024} KiB "
                "the host tiling reserves for bias/scale/workspace",
                cost_s=self.plan.build_s / 10,
            )
        clean = float(self.model.seconds(cols, gemm)[0])
        latency_s = clean * measure.noise_factor(self.noise, self.seed, full, gemm, draw)
        extra: dict[str, Any] = {"model_latency_s": clean}
        if full["quantization"]:
            extra["accuracy_loss"] = measure.int8_relative_error(gemm.K)
        key = tuple(sorted(full.items()))
        first = key not in self._built
        build_s = self.plan.build_s if first else 0.0
        self._built.add(key)
        # one host program builds once and times every GEMM shape of the config: its
        # start-up overhead (run_s) is charged with the build, once per config
        run_s = self.plan.run_s if first else 0.0
        cost = measure.measurement_cost_s(latency_s, build_s, self.plan.warmup,
                                          self.plan.repeats) + run_s
        extra["build_s"] = build_s  # the build's part of the cost (0: built before)
        return Measurement.success(latency_s, cost, spread=self.noise or None, extra=extra)


# ---------------------------------------------------------------------- helpers
def _number(name: str, value: Any, low: float, high: float | None = None) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < low or (high is not None and value > high):
        bound = f"from {low:g} to {high:g}" if high is not None else f">= {low:g}"
        raise ValueError(f"{name}: expected a number {bound}, got {value!r}")
    return float(value)


def _integer(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
    return int(value)


def _hidden_reserve(value: Any) -> int | None:
    """hidden_failures: false (off), true (the default reserve) or a reserve in KiB."""
    if value is False or value is None:
        return None
    if value is True:
        return DEFAULT_HIDDEN_RESERVE_KIB * 1024
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return int(value * 1024)
    raise ValueError(f"hidden_failures: expected true, false or the L1 KiB the host tiling "
                     f"reserves (a positive number), got {value!r}")
