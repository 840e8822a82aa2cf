"""The simulator as a prior, calibrated per kernel family on the study's own measurements.

The shipped simulator keeps most orderings of configs within a kernel
family but can be a third off in absolute time, and its families can be off
by different factors (catlass's Preload and Pingpong dispatch, split-K's
extra pass). A single scale fixes nothing about the order; a scale per
family does: as measurements arrive, each family with ``MIN_KERNELS`` measured
configs gets its own scale and launch term fitted by ``aoe-tune calibrate``'s
robust fit (``calibration/chip_least_squares.py``: soft-L1 on log time), and the
others take the fit to all measured configs. Predictions are then tokens/s
of the calibrated step time.

This module is the one place a sampler's prior reaches the simulator: it
takes a built simulator (``latency(columns, gemm)``), from the backend
registry by name (``simulator_for``) or from a spec (``spec_simulator_prior``).
Any model with that ``latency`` serves the same way: a backend's model of its
own kernel (``study/prior_of.py`` ``model_prior``, the cpu study's default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from aoe_optuna.calibration.chip_fit import MIN_KERNELS, fits_launch
from aoe_optuna.calibration.chip_least_squares import fit
from aoe_optuna.samplers.priors.id_values import IdValues
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Workload

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile
    from aoe_optuna.spec.loader import StudySpec

# The knobs that pick a catlass kernel template and dispatch policy, each with its
# plain kernel's value (Pingpong dispatch, no split-K): each combination of plain or
# not is a family of kernels whose constants the calibration fits apart.
FAMILY_PARAMS = {"preload": 0, "split_k": 1}


def family_keys(space: SearchSpace, rows: np.ndarray) -> np.ndarray:
    """(n,) one int per kernel family: Preload or Pingpong dispatch, split-K or not
    (a space without these knobs is one family). The one place a prior groups configs
    by family."""
    rows = np.atleast_2d(rows)
    cols = space.columns(rows)
    key = np.zeros(rows.shape[0], dtype=np.int64)
    present = [name for name in FAMILY_PARAMS if name in space.names]
    for bit, name in enumerate(present):
        key += (1 << bit) * (np.asarray(cols[name]) != FAMILY_PARAMS[name])
    return key


class SimulatorPrior:
    """tokens/s the simulator predicts for each config, its step time calibrated per family."""

    def __init__(self, name: str, workload: Workload, simulator: Any,
                 calibrate: bool = True) -> None:
        self.name = name
        self.workload = workload
        self.simulator = simulator
        self.calibrate = calibrate
        self.families: dict[int, tuple[float, float]] = {}  # family -> (scale, launch s)
        self.overall: tuple[float, float] = (1.0, 0.0)
        self._fitted_on = -1
        self._steps = IdValues()  # uncalibrated step times by flat id
        self._space_id: int | None = None

    def model_step_s(self, space: SearchSpace, rows: np.ndarray) -> np.ndarray:
        """The uncalibrated step time (s) of each row; NaN where the simulator refuses it.
        Kept by flat id: a recalibration re-scales them, it does not re-simulate."""
        rows = np.atleast_2d(rows)
        if self._space_id != id(space):
            self._space_id = id(space)
            self._steps.clear()

        def simulate(at: np.ndarray) -> np.ndarray:
            cols = space.columns(rows[at])
            step = np.full(at.shape[0], self.workload.fixed_s)
            for g in self.workload.gemms:
                step = step + g.count * np.asarray(self.simulator.latency(cols, g), dtype=float)
            return step

        return self._steps.get(space.flat_id(rows), simulate)

    def predict(self, space: SearchSpace, rows: np.ndarray) -> np.ndarray:
        step = self.model_step_s(space, rows)
        keys = family_keys(space, rows)
        scale = np.full(step.shape[0], self.overall[0])
        launch = np.full(step.shape[0], self.overall[1])
        for family, (s, d) in self.families.items():
            scale[keys == family], launch[keys == family] = s, d
        calibrated = scale * step + launch
        return np.where(np.isfinite(calibrated) & (calibrated > 0),
                        self.workload.tokens_per_step / np.where(calibrated > 0, calibrated, 1.0),
                        np.nan)

    def observe(self, space: SearchSpace, rows: np.ndarray, values: np.ndarray) -> bool:
        """Refit the per-family calibration on the measured ``rows`` (tokens/s ``values``);
        True when it changed."""
        if not self.calibrate or rows.shape[0] == self._fitted_on:
            return False
        self._fitted_on = rows.shape[0]
        model = self.model_step_s(space, rows)
        measured = self.workload.tokens_per_step / np.asarray(values, dtype=float)
        ok = np.isfinite(model) & np.isfinite(measured) & (measured > 0) & (model > 0)
        if ok.sum() < MIN_KERNELS:
            return False
        before = (dict(self.families), self.overall)
        self.overall = _fit_us(model[ok], measured[ok])
        keys = family_keys(space, rows)
        self.families = {int(k): _fit_us(model[ok & (keys == k)], measured[ok & (keys == k)])
                         for k in np.unique(keys[ok]) if (ok & (keys == k)).sum() >= MIN_KERNELS}
        return (self.families, self.overall) != before


def _fit_us(model_s: np.ndarray, measured_s: np.ndarray) -> tuple[float, float]:
    """(scale, launch in s) of calibrate's robust fit, done in microseconds as it is."""
    model_us, measured_us = model_s * 1e6, measured_s * 1e6
    scale, launch_us = fit(model_us, measured_us, fits_launch(model_us))
    return scale, launch_us * 1e-6


def simulator_for(profile: SocProfile) -> Any:
    """The shipped simulator for ``profile``, noise-free (through the backend registry)."""
    from aoe_optuna.backends.registry import backend_class

    return backend_class("simulator").from_options({}, profile)


def spec_simulator_prior(spec: StudySpec, calibrate: bool = True) -> SimulatorPrior:
    """The simulator of ``spec`` (its SoC, its workload) as a prior for a study of the same
    space: the bench's ``--prior-space SPEC``, the npu backend's default."""
    if spec.exact_model:  # the study runs on the simulator: its own, as configured
        from aoe_optuna.spec.backend import make_backend

        simulator = make_backend(spec)
    else:
        simulator = simulator_for(spec.profile)
    return SimulatorPrior(f"simulator {spec.profile.soc}", spec.workload, simulator, calibrate)
