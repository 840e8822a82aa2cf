"""The AI core's own tiling rules (buffer capacities, fractal alignment).

These apply to every study, whatever its spec says: a config that overflows
L0A would not compile (or would corrupt memory) on the real chip, so it must
never be measured. The rules follow TCubeTiling's feasibility conditions and
catlass's tile pruner (see ../shared/reference/ascend-910b.md):

* L0A: tile_m x tile_k x bytes x (2 when L0 is double buffered) <= L0A
* L0B: tile_k x tile_n x bytes x (2 when double buffered) <= L0B
* L0C: tile_m x tile_n x 4 (fp32/int32 accumulator; dbL0C = 1) <= L0C
* L1: (tile_m + tile_n) x l1 K x bytes x (2 with prefetch) <= L1, where the
  L1 tile's K is ``l1_k``, or tile_k x l1_k_steps when ``l1_k`` is 0
* alignment: tile_m, tile_n multiples of 16; tile_k a multiple of C0; l1_k a
  multiple of tile_k (catlass walks an L1 tile in whole L0 tiles).

``bytes`` is the element size of the workload's dtype, or 1 when the config
turns int8 quantization on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.constraints import Columns

FRACTAL = 16
ACCUMULATOR_BYTES = 4


def element_bytes(columns: Columns, dtype: str) -> np.ndarray:
    """Bytes per A/B element for each config (int8 when quantized)."""
    return np.where(columns["quantization"] != 0, 1, DTYPE_BYTES[dtype])


def l0_buffers(columns: Columns) -> np.ndarray:
    """1 or 2 copies of the L0A/L0B block (ping-pong only with double buffering)."""
    return np.where(columns["pipeline"] >= 2, 2, 1)


def l1_tile_k(columns: Columns, profile: SocProfile) -> np.ndarray:
    """K depth of the L1 tile: ``l1_k``, or tile_k x the profile's L1 steps when 0."""
    return np.where(columns["l1_k"] > 0, columns["l1_k"],
                    columns["tile_k"] * profile.l1_k_steps)


def l1_stages(columns: Columns) -> np.ndarray:
    """1 or 2 copies of the L1 block (the second holds the prefetched block)."""
    return np.where(columns["l1_prefetch"] != 0, 2, 1)


@dataclass(frozen=True)
class CapacityRule:
    """``needs(columns) <= capacity`` for one on-chip buffer."""

    name: str
    variables: frozenset[str]
    capacity: int
    needs: Callable[[Columns], np.ndarray]

    def violation(self, columns: Columns) -> np.ndarray:
        return self.needs(columns).astype(float) / self.capacity - 1.0

    def describe(self, columns: Columns) -> str:
        need = int(np.asarray(self.needs(columns)).ravel()[0])
        return f"{self.name}: needs {_kib(need)}, has {_kib(self.capacity)}"


@dataclass(frozen=True)
class AlignmentRule:
    """``columns[param] % multiple(columns) == 0``."""

    name: str
    param: str
    variables: frozenset[str]
    multiple: Callable[[Columns], np.ndarray]

    def violation(self, columns: Columns) -> np.ndarray:
        m = self.multiple(columns)
        return (columns[self.param] % m).astype(float) / m

    def describe(self, columns: Columns) -> str:
        value = int(np.asarray(columns[self.param]).ravel()[0])
        m = int(np.asarray(self.multiple(columns)).ravel()[0])
        return f"{self.name}: {self.param}={value} is not a multiple of {m}"


def hardware_rules(profile: SocProfile, dtype: str) -> list[CapacityRule | AlignmentRule]:
    """The rules of ``profile`` for a GEMM of ``dtype``."""
    tiles = {"tile_m", "tile_k", "tile_n"}

    def l0a(c: Columns) -> np.ndarray:
        return c["tile_m"] * c["tile_k"] * element_bytes(c, dtype) * l0_buffers(c)

    def l0b(c: Columns) -> np.ndarray:
        return c["tile_k"] * c["tile_n"] * element_bytes(c, dtype) * l0_buffers(c)

    def l0c(c: Columns) -> np.ndarray:
        return c["tile_m"] * c["tile_n"] * ACCUMULATOR_BYTES

    def l1(c: Columns) -> np.ndarray:
        block = (c["tile_m"] + c["tile_n"]) * l1_tile_k(c, profile)
        return block * element_bytes(c, dtype) * l1_stages(c)

    def l1_k_steps(c: Columns) -> np.ndarray:
        return np.where(c["l1_k"] > 0, c["tile_k"], 1)

    def c0(c: Columns) -> np.ndarray:
        return np.where(c["quantization"] != 0, profile.c0["int8"], profile.c0[dtype])

    def fractal(_c: Columns) -> np.ndarray:
        return np.asarray(FRACTAL)

    return [
        CapacityRule("L0A", frozenset(tiles - {"tile_n"} | {"pipeline", "quantization"}),
                     profile.l0a_bytes, l0a),
        CapacityRule("L0B", frozenset(tiles - {"tile_m"} | {"pipeline", "quantization"}),
                     profile.l0b_bytes, l0b),
        CapacityRule("L0C", frozenset({"tile_m", "tile_n"}), profile.l0c_bytes, l0c),
        CapacityRule("L1", frozenset(tiles | {"l1_k", "l1_prefetch", "quantization"}),
                     profile.l1_bytes, l1),
        AlignmentRule("align_m", "tile_m", frozenset({"tile_m"}), fractal),
        AlignmentRule("align_n", "tile_n", frozenset({"tile_n"}), fractal),
        AlignmentRule("align_k", "tile_k", frozenset({"tile_k", "quantization"}), c0),
        AlignmentRule("align_l1_k", "l1_k", frozenset({"l1_k", "tile_k"}), l1_k_steps),
    ]


def _kib(n: int) -> str:
    return f"{n / 1024:g} KiB"
