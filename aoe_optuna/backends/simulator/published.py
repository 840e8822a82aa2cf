"""Published Ascend 910B GEMM timings the simulator is calibrated against.

Each record is one kernel timing someone else measured on real hardware,
with the config that ran (tile shapes, swizzle, dispatch policy, kernel
variant, layouts) written as this project's parameters. ``config`` None
means a library kernel whose tiling is not published: it is compared with
the simulator's best config on the space of :func:`library_space`.
scripts/calibrate_simulator.py prints the table; a test guards it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CATLASS_GUIDE = ("hicann/catlass docs/zh/1_Practice/11_matmul_optimization.md"
                 "@0c1b33a001cfaacefd1de2a1a94bfe540747c538")
TORCH_NPU = ("https://github.com/zzc0721/torch-performance-test-data/issues/109 "
             "(torch_npu matmul, 910B2)")

# catlass examples as configs: 00_basic_matmul (MmadAtlasA2Pingpong, AIC only),
# 21_basic_matmul_preload_zN (MmadAtlasA2Preload), 06_optimized_matmul (Preload,
# plus the vector cores' padding to the L1 tile).
BASIC = {"preload": 0, "unit_flag": 1}
PRELOAD = {"preload": 1, "unit_flag": 1}
OPTIMIZED = {"preload": 1, "unit_flag": 1, "padding": 1}


@dataclass(frozen=True)
class Published:
    """One published timing: where, what shape, which config, how long."""

    name: str
    source: str
    soc: str
    m: int
    n: int
    k: int
    dtype: str
    published_us: float
    config: dict[str, Any] | None = field(default=None)


def _tiles(m: int, n: int, l1_k: int, l0_k: int, **extra: Any) -> dict[str, Any]:
    return {"tile_m": m, "tile_n": n, "l1_k": l1_k, "tile_k": l0_k, "pipeline": 2,
            "l1_prefetch": 1, **extra}


def _row_col(**extra: Any) -> dict[str, Any]:
    return {"layout_a": "row_major", "layout_b": "col_major", **extra}


def _row_zn(**extra: Any) -> dict[str, Any]:
    return {"layout_a": "row_major", "layout_b": "zN", **extra}


def _row_row(**extra: Any) -> dict[str, Any]:
    return {"layout_a": "row_major", "layout_b": "row_major", **extra}


def _tflops_to_us(size: int, tflops: float) -> float:
    return 2.0 * size**3 / (tflops * 1e12) * 1e6


# The guide's 20-AIC figures: a 20-cube-core Atlas A2 part, read as the 910B3.
PUBLISHED: tuple[Published, ...] = (
    Published("tile: optimized, default tiles", CATLASS_GUIDE, "Ascend910B3", 1024, 576, 6144,
              "fp16", 72.5, {**_tiles(128, 256, 256, 64), **_row_col(**OPTIMIZED)}),
    Published("tile: optimized, balanced tiles", CATLASS_GUIDE, "Ascend910B3", 1024, 576, 6144,
              "fp16", 48.6, {**_tiles(256, 128, 256, 64), **_row_col(**OPTIMIZED)}),
    Published("tile: preload zN, default tiles", CATLASS_GUIDE, "Ascend910B3", 20, 6144, 16384,
              "fp16", 181.4, {**_tiles(128, 256, 256, 64), **_row_zn(**PRELOAD)}),
    Published("tile: preload zN, balanced tiles", CATLASS_GUIDE, "Ascend910B3", 20, 6144,
              16384, "fp16", 139.6, {**_tiles(32, 320, 128, 32), **_row_zn(**PRELOAD)}),
    Published("tile: preload row-major B, default tiles", CATLASS_GUIDE, "Ascend910B3", 20,
              6144, 16384, "fp16", 238.8, {**_tiles(128, 256, 256, 64), **_row_row(**PRELOAD)}),
    Published("tile: preload row-major B, balanced tiles", CATLASS_GUIDE, "Ascend910B3", 20,
              6144, 16384, "fp16", 252.4, {**_tiles(32, 320, 128, 32), **_row_row(**PRELOAD)}),
    Published("tile: basic fp32, default tiles", CATLASS_GUIDE, "Ascend910B2", 1, 768, 5120,
              "fp32", 36.3, {**_tiles(128, 128, 256, 64), **_row_col(**BASIC)}),
    Published("tile: basic fp32, thin tiles", CATLASS_GUIDE, "Ascend910B2", 1, 768, 5120,
              "fp32", 15.5, {**_tiles(16, 32, 1024, 256), **_row_col(**BASIC)}),
    Published("swizzle <3,1>", CATLASS_GUIDE, "Ascend910B3", 160, 6144, 2048, "fp16", 40.6,
              {**_tiles(128, 256, 256, 64), **_row_zn(**PRELOAD), "swizzle_offset": 3,
               "swizzle_direction": 1}),
    Published("swizzle <4,1>", CATLASS_GUIDE, "Ascend910B3", 160, 6144, 2048, "fp16", 35.3,
              {**_tiles(128, 256, 256, 64), **_row_zn(**PRELOAD), "swizzle_offset": 4,
               "swizzle_direction": 1}),
    *(Published(f"torch_npu {s}^3", TORCH_NPU, "Ascend910B2", s, s, s, "fp16",
                _tflops_to_us(s, tf))
      for s, tf in ((1024, 98.1), (2048, 251.0), (4096, 314.5), (8192, 305.5),
                    (10240, 274.8))),
)

# Pairs of records of the same shape whose order the model must reproduce
# (the faster one first), the tuning decisions the guide teaches.
RANKING_PAIRS: tuple[tuple[str, str], ...] = (
    ("tile: optimized, balanced tiles", "tile: optimized, default tiles"),
    ("tile: preload zN, balanced tiles", "tile: preload zN, default tiles"),
    ("tile: preload row-major B, default tiles", "tile: preload row-major B, balanced tiles"),
    ("tile: basic fp32, thin tiles", "tile: basic fp32, default tiles"),
    ("swizzle <4,1>", "swizzle <3,1>"),
)
