"""Named configs and spaces the tools compare a study against.

* the *seed space*: AOE's tile ranges (16..256 step 16 for the three tile
  sizes), the pipelining modes, L1 prefetch and 512 B output alignment: the
  space every study had before catlass's knobs were parameters;
* catlass's *default kernel*: its basic matmul as the examples instantiate it
  for fp16 (hicann/catlass examples/00_basic_matmul: L1TileShape<128, 256,
  256>, L0TileShape<128, 256, 64>, GemmIdentityBlockSwizzle<3, 0>,
  MmadAtlasA2Pingpong<true>).
"""

from __future__ import annotations

from typing import Any

from aoe_optuna.space.params import Param

SEED_TILES = tuple(range(16, 257, 16))
CATLASS_PARAMS = ("l1_k", "swizzle_offset", "swizzle_direction", "preload", "unit_flag",
                  "split_k", "padding", "layout_a", "layout_b")
CATLASS_DEFAULT: dict[str, Any] = {
    "tile_m": 128, "tile_n": 256, "tile_k": 64, "l1_k": 256, "swizzle_offset": 3,
    "swizzle_direction": 0, "preload": 0, "unit_flag": 1, "split_k": 1, "padding": 0,
    "pipeline": 2, "l1_prefetch": 1,
}


def seed_params() -> list[Param]:
    """The seed space's parameters (49,152 points before the capacity rules)."""
    return [Param.known("tile_m", SEED_TILES), Param.known("tile_k", SEED_TILES),
            Param.known("tile_n", SEED_TILES), Param.known("pipeline", [0, 1, 2]),
            Param.known("l1_prefetch", [0, 1]), Param.known("output_align", [0, 1])]
