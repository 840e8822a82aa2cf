"""One model of latency over config and shape: the GP a kernel set's measurements share.

A GEMM space's configs are the same at every M, so the shape is an input beside the
config: the space's encoding of the config, the tiling fit of the config to this
shape (padding of M, K, N by the tiles and the share of core-waves that work:
:class:`~aoe_optuna.samplers.gp_ucb._tiling_features.TilingFeatures` for the one GEMM),
log2 M and log2 of M padded to whole tiles over the operator's range, and log2 of the
waves of blocks the cores run. A measurement of one config at one M then
informs every other (config, M): the same config nearby in M, and configs like it.

The target is log(latency / scale(M)), where scale is the shape's bound (its roofline
plus a kernel's launch, on a backend whose kernels run on the SoC) or its FLOPs (the
cpu backend): what is left to learn is how far from its bound each config runs, which
varies far less across M than the latency itself (a prefill of 8,192 tokens runs
about 60x a prefill of 128). The GP is the GP-UCB sampler's
(:mod:`aoe_optuna.samplers.gp_ucb._model`: Matern-5/2 with a length scale per input,
fitted by marginal likelihood, hyperparameters warm-started between fits while the
run measures; the fit a kernel set is chosen from starts afresh, so the choice is a
function of the stored measurements, whichever fits came before).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aoe_optuna.kernel_set.operator_mix import OperatorMix
from aoe_optuna.samplers.gp_ucb._model import FittedGP, Hyper, Posterior, fit_gp
from aoe_optuna.samplers.gp_ucb._tiling_features import TilingFeatures
from aoe_optuna.space.search_space import SearchSpace

Scale = Callable[[int], float]  # seconds a shape's latency is measured against
WAVE_SCALE = 8.0  # log2 of the waves over this: 256 waves span the unit interval


class JointInputs:
    """(config rows, M) -> the GP's input columns."""

    def __init__(self, space: SearchSpace, op: OperatorMix, cores: int | None) -> None:
        self.space = space
        self.op = op
        self.cores = cores
        lo, hi = np.log2(float(op.m[0])), np.log2(float(op.m[-1]))
        self._lo, self._span = lo, max(hi - lo, 1.0)
        self._tiling: dict[int, TilingFeatures] = {}

    def __call__(self, rows: np.ndarray, m: int) -> np.ndarray:
        rows = np.atleast_2d(rows)
        if m not in self._tiling:
            self._tiling[m] = TilingFeatures(self.space, [self.op.gemm(m)], self.cores)
        return np.concatenate([self.space.encode(rows), self._tiling[m](rows),
                               self._steps(rows, m)], axis=1)

    def _steps(self, rows: np.ndarray, m: int) -> np.ndarray:
        """log2 M, log2 of M padded to whole tiles, and log2 of the waves of blocks the
        cores run (tiles of M x tiles of N x K splits over the cores; without a core
        count, the tiles of M): a config's latency steps where M crosses a multiple of
        its tile and the blocks need another wave, which the fills alone do not say."""
        cols = self.space.columns(rows)
        tile_m = np.asarray(cols["tile_m"], dtype=float)
        tiles_m = np.ceil(m / tile_m)
        padded = (np.log2(tiles_m * tile_m) - self._lo) / self._span
        if self.cores is None:
            waves = tiles_m
        else:
            tiles_n = np.ceil(self.op.N / np.asarray(cols["tile_n"], dtype=float))
            splits = np.asarray(cols.get("split_k", np.ones(len(rows))), dtype=float)
            waves = np.ceil(tiles_m * tiles_n * splits / self.cores)
        own = np.full(len(rows), (np.log2(float(m)) - self._lo) / self._span)
        return np.stack([own, padded, np.log2(waves) / WAVE_SCALE], axis=1)


class JointModel:
    """The GP over (config, M) of one operator, refitted as measurements arrive."""

    def __init__(self, inputs: JointInputs, scale: Scale) -> None:
        self.inputs = inputs
        self.scale = scale
        self.hyper: Hyper | None = None
        self._posterior: Posterior | None = None
        self._mean = 0.0
        self._std = 1.0

    @property
    def fitted(self) -> bool:
        return self._posterior is not None

    def fit(self, rows: np.ndarray, ms: np.ndarray, latency_s: np.ndarray,
            fresh: bool = False) -> None:
        """Fit to measured latencies of ``rows`` at ``ms`` (one per row): warm-started
        from the last fit's hyperparameters, or, ``fresh``, from the GP's own start (a
        fit that depends on the measurements alone, not on the fits before it)."""
        x = np.concatenate([self.inputs(r[None, :], int(m)) for r, m in zip(rows, ms,
                                                                          strict=True)])
        y = self._target(latency_s, ms)
        self._mean, self._std = float(y.mean()), float(y.std()) or 1.0
        fit: FittedGP = fit_gp(x, (y - self._mean) / self._std, None if fresh else self.hyper)
        self.hyper = fit.hyper
        self._posterior = Posterior(fit)

    def _target(self, latency_s: np.ndarray, ms: np.ndarray) -> np.ndarray:
        scale = np.array([self.scale(int(m)) for m in ms])
        return np.log(np.asarray(latency_s, dtype=float) / scale)

    def predict_log(self, rows: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of log latency (s) of ``rows`` at ``m``."""
        if self._posterior is None:
            raise RuntimeError("the joint model has no measurements yet")
        mean, std = self._posterior.predict(self.inputs(rows, m))
        return mean * self._std + self._mean + np.log(self.scale(m)), std * self._std

    def latency(self, rows: np.ndarray, ms: np.ndarray, risk: float = 0.0) -> np.ndarray:
        """The predicted latency (s) of each row at each M: a (rows, M) matrix; with
        ``risk``, that many standard deviations above the mean of log latency."""
        out = np.empty((np.atleast_2d(rows).shape[0], len(ms)))
        for j, m in enumerate(np.asarray(ms).tolist()):
            mean, std = self.predict_log(rows, int(m))
            out[:, j] = np.exp(mean + risk * std)
        return out
