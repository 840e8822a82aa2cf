"""Tiling arithmetic as extra GP inputs: how well a tile shape fits the workload's GEMMs.

Throughput of a tiled GEMM is not smooth in the tile sizes. Two effects of
integer division dominate: padding (a 208-wide tile covers N = 3584 with 18
tiles, computing 3744 columns) and wave quantisation (18 blocks on 24 cores
leave 6 idle; 25 blocks need a second, nearly empty wave). Neighbouring tile
sizes can differ by 10 % for these reasons alone, which a stationary kernel
on the tile sizes cannot represent: it either smooths them away or shrinks
its length scales until it generalises nowhere.

These effects are cheap to compute exactly from the shapes, so we give them
to the GP as inputs instead of asking it to learn them. Per GEMM:

* ``fill_m``, ``fill_k``, ``fill_n``: dim / (tiles x tile) along each axis,
  the share of the computed (padded) extent that is real;
* ``core_fill``: blocks / (waves x cores), the share of core-waves that work.

``core_fill`` needs the core count of the device that runs the kernel (the
SoC's cube cores for the simulator and the NPU); a backend that measures
elsewhere (the CPU kernel) gets the three fills only.

Each is averaged over the workload's GEMMs weighted by their flops x count
(what dominates the step dominates the feature). All lie in (0, 1]. They are
the geometry any tiled-GEMM cost model starts from (TVM's and Ansor's learned
cost models use the same kind of per-loop extent features); nothing here is
specific to our simulator, and a space without the three tile sizes gets none.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aoe_optuna.samplers.base import is_gemm_tiling
from aoe_optuna.space.params import TILE_NAMES
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Gemm

FEATURE_NAMES = ("fill_m", "fill_k", "fill_n", "core_fill")


class TilingFeatures:
    """Index rows -> (n, 4) tiling-fit features (3 without a core count) for one space."""

    def __init__(self, space: SearchSpace, gemms: Sequence[Gemm], cores: int | None) -> None:
        if not gemms:
            raise ValueError("tiling features need at least one GEMM")
        if cores is not None and cores < 1:
            raise ValueError(f"cores: expected >= 1 or None, got {cores}")
        self.space = space
        self.cores = None if cores is None else int(cores)
        self.names = FEATURE_NAMES if cores is not None else FEATURE_NAMES[:3]
        self.dims = np.array([[g.M, g.K, g.N] for g in gemms], dtype=float)  # (g, 3)
        weight = np.array([g.count * g.flops for g in gemms], dtype=float)
        self.weight = weight / weight.sum()

    @classmethod
    def for_space(
        cls, space: SearchSpace, gemms: Sequence[Gemm] | None, cores: int | None
    ) -> TilingFeatures | None:
        """The features of a GEMM tiling space, or None when the space or context lacks them."""
        if not gemms:
            return None
        if not is_gemm_tiling(space):
            return None
        return cls(space, gemms, cores)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        cols = self.space.columns(np.atleast_2d(rows))
        tiles = np.stack([np.asarray(cols[n], dtype=float) for n in TILE_NAMES], axis=1)  # (n, 3)
        out = np.zeros((tiles.shape[0], len(self.names)))
        for w, dims in zip(self.weight, self.dims, strict=True):
            counts = np.ceil(dims[None, :] / tiles)  # tiles per axis (n, 3)
            out[:, :3] += w * dims[None, :] / (counts * tiles)
            if self.cores is not None:
                blocks = counts[:, 0] * counts[:, 2]
                out[:, 3] += w * blocks / (np.ceil(blocks / self.cores) * self.cores)
        return out


class GPInputs:
    """Index rows -> the GP's input columns: the space's encoding, then tiling features if any."""

    def __init__(self, space: SearchSpace, tiling: TilingFeatures | None = None) -> None:
        self.space = space
        self.tiling = tiling

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        x = self.space.encode(rows)
        if self.tiling is None or x.shape[0] == 0:
            return x
        return np.concatenate([x, self.tiling(rows)], axis=1)
