"""A config as catlass template arguments: one job, no text rendering.

catlass (Huawei's Ascend C GEMM template library, github.com/hicann/catlass) builds a
GEMM from a chain of template arguments; :func:`catlass_args` picks each one from a
config and refuses, with one line naming the value, what catlass would not compile
or does not have. Facts from catlass@0dfcf9df304f297361edab86448ac5ea6aed1647
(paths below are relative to that tree):

* dispatch policies ``MmadAtlasA2Pingpong<UNIT_FLAG>`` and
  ``MmadAtlasA2Preload<UNIT_FLAG, SHUFFLE_K>``, both ``STAGES = 2``; int8 must run
  with unit flag off (include/catlass/gemm/dispatch_policy.hpp);
* the block MMAD's static_asserts: L1 M,N equal L0 M,N; L0 K <= L1 K; every tile
  edge 32 B aligned; A+B L1 tiles x STAGES within ``AtlasA2::L1_SIZE``; L0A/L0B
  tiles x STAGES within 64 KiB each; the fp32 L0C tile within 128 KiB
  (include/catlass/gemm/block/block_mmad_pingpong.hpp, block_mmad_preload.hpp,
  include/catlass/gemm/helper.hpp TileShapeAlignChecker, include/catlass/arch/arch.hpp);
* kernels: ``BasicMatmul`` (pingpong), ``BasicMatmulPreload`` (the only plain kernel
  that calls a preload block MMAD with the next block's operands),
  ``PaddingMatmul`` (row/column-major operands only: PaddingMatrixND),
  ``SplitkMatmul`` with ``SplitkGemmIdentityBlockSwizzle`` and ``SplitkReduceAdd``
  (fp32 partials), ``QuantMatmulMultiStageWorkspace`` with the
  ``MmadAtlasA2PreloadAsyncWithCallback`` policy and a per-token dequant epilogue
  (include/catlass/gemm/kernel/*.hpp; examples 00, 04, 09, 12, 21).

Our simple kernel's ``pipeline``/``l1_prefetch`` knobs have one catlass value each:
its policies hold two L0 buffers and two L1 stages, i.e. pipeline=2 (double buffer)
and l1_prefetch=1. Any other value is refused rather than silently re-meant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aoe_optuna.hardware.profile import SocProfile

CATLASS_COMMIT = "0dfcf9df304f297361edab86448ac5ea6aed1647"
VARIANTS = ("basic", "preload", "padding", "splitk", "quant")


class CatlassArgError(ValueError):
    """A config that is no catlass instantiation; the message names the value."""


@dataclass(frozen=True)
class ArchInfo:
    """A catlass ArchTag with the buffer sizes its static_asserts check against."""

    tag: str  # C++ name
    npu_arch: str  # CATLASS_ARCH (the --npu-arch=dav-<arch> of the kernel compiler)
    l1: int
    l0a: int
    l0b: int
    l0c: int


# include/catlass/arch/arch.hpp: struct AtlasA2 (Atlas A2 = the 910B family, arch 2201).
ATLAS_A2 = ArchInfo("Catlass::Arch::AtlasA2", "2201", 512 * 1024, 64 * 1024, 64 * 1024,
                    128 * 1024)
SOC_ARCHES = {"Ascend910B": ATLAS_A2, "Ascend910_93": ATLAS_A2}

ELEMENTS = {"fp16": ("half", 2), "bf16": ("bfloat16_t", 2)}
LAYOUT_TYPES = {"row_major": "RowMajor", "col_major": "ColumnMajor", "zN": "zN"}
LEGACY_LAYOUTS = {"row_major": "row_major", "col_major": "col_major", "z_major": "zN"}
ALIGN_BYTES = 32
ACCUMULATOR_BYTES = 4
STAGES = 2  # both policies' STAGES (dispatch_policy.hpp)


@dataclass(frozen=True)
class CatlassArgs:
    """Everything a catlass GEMM instantiation is made of, as plain values."""

    arch: ArchInfo
    variant: str  # one of VARIANTS
    dtype: str  # the workload's element type (fp16/bf16); int8 inputs when quant
    element_a: str
    element_b: str
    element_c: str  # what the block MMAD writes (float for split-K, int32_t for quant)
    element_out: str  # what the user gets in C (D for quant)
    layout_a: str  # RowMajor / ColumnMajor / zN (Catlass::layout::)
    layout_b: str
    l1: tuple[int, int, int]  # L1TileShape M, N, K
    l0: tuple[int, int, int]  # L0TileShape M, N, K
    swizzle_offset: int
    swizzle_direction: int
    unit_flag: bool
    preload: bool
    split_k: int

    @property
    def element_bytes(self) -> int:
        return 1 if self.variant == "quant" else ELEMENTS[self.dtype][1]


def arch_for(profile: SocProfile) -> ArchInfo:
    for prefix, arch in SOC_ARCHES.items():
        if profile.soc.startswith(prefix):
            return arch
    raise CatlassArgError(f"soc {profile.soc}: the catlass kernel is rendered for Atlas A2 "
                          f"SoCs ({', '.join(SOC_ARCHES)}*) only")


def operand_layouts(config: Mapping[str, Any]) -> tuple[str, str]:
    """layout_a/layout_b; at their default row_major the legacy ``layout`` decides."""
    legacy = LEGACY_LAYOUTS[str(config.get("layout", "row_major"))]
    a = str(config.get("layout_a", "row_major"))
    b = str(config.get("layout_b", "row_major"))
    return (legacy if a == "row_major" else a), (legacy if b == "row_major" else b)


def l1_k(config: Mapping[str, Any], profile: SocProfile) -> int:
    """The L1 tile's K: ``l1_k``, or tile_k x the profile's l1_k_steps when 0
    (the scalar twin of aoe_optuna.hardware.capacity.l1_tile_k)."""
    k = int(config.get("l1_k", 0))
    return k if k > 0 else int(config["tile_k"]) * int(profile.l1_k_steps)


def variant_of(config: Mapping[str, Any]) -> str:
    """Which catlass kernel the config asks for; combinations catlass lacks are refused."""
    quant = bool(config.get("quantization", False))
    split = int(config.get("split_k", 1))
    padding = bool(config.get("padding", 0))
    preload = bool(config.get("preload", 0))
    if split < 1:
        raise CatlassArgError(f"split_k={split}: expected 1 (no split) or more")
    chosen = [name for name, on in (("quantization", quant), ("split_k", split > 1),
                                    ("padding", padding)) if on]
    if len(chosen) > 1:
        raise CatlassArgError(f"{' and '.join(chosen)}: the catlass kernels rendered here "
                              "take one of quantization, split-K and padding")
    if preload and (split > 1 or padding):
        raise CatlassArgError(f"preload=1 with {chosen[0]}: catlass's {chosen[0]} kernel "
                              "calls a pingpong block MMAD (only BasicMatmulPreload preloads)")
    if quant:
        return "quant"
    if split > 1:
        return "splitk"
    if padding:
        return "padding"
    return "preload" if preload else "basic"


def catlass_args(config: Mapping[str, Any], profile: SocProfile, dtype: str) -> CatlassArgs:
    """The template arguments of ``config``; :class:`CatlassArgError` when there are none."""
    arch = arch_for(profile)
    if dtype not in ELEMENTS:
        raise CatlassArgError(f"dtype {dtype}: the catlass kernel is rendered for "
                              f"{sorted(ELEMENTS)} (int8 through quantization=true)")
    pipeline, prefetch = int(config.get("pipeline", 2)), int(config.get("l1_prefetch", 1))
    if pipeline != 2 or prefetch != 1:
        raise CatlassArgError(
            f"pipeline={pipeline}, l1_prefetch={prefetch}: catlass's dispatch policies "
            "double-buffer L0 and L1 (STAGES=2), i.e. pipeline=2 and l1_prefetch=1 only")
    variant = variant_of(config)
    unit_flag = bool(config.get("unit_flag", 0))
    if variant == "quant" and unit_flag:
        raise CatlassArgError("unit_flag=1 with quantization: catlass requires "
                              "ENABLE_UNIT_FLAG false for int8 inputs")
    layout_a, layout_b = operand_layouts(config)
    if variant == "padding" and "zN" in (layout_a, layout_b):
        raise CatlassArgError("padding=1 with a zN operand: catlass's PaddingMatmul pads "
                              "row- and column-major operands only")
    if variant == "quant" and dtype != "fp16":
        raise CatlassArgError(f"quantization with dtype {dtype}: the catlass per-token dequant "
                              "epilogue rendered here writes fp16 (half) only")
    if variant == "quant" and "zN" in (layout_a, layout_b):
        raise CatlassArgError("quantization with a zN operand: the catlass quant matmul "
                              "example covers row- and column-major operands only")
    offset = int(config.get("swizzle_offset", 3))
    direction = int(config.get("swizzle_direction", 0))
    if offset < 1:
        raise CatlassArgError(f"swizzle_offset={offset}: expected 1 or more")
    if direction not in (0, 1):
        raise CatlassArgError(f"swizzle_direction={direction}: expected 0 (Zn) or 1 (Nz)")
    m, n, k0 = int(config["tile_m"]), int(config["tile_n"]), int(config["tile_k"])
    k1 = l1_k(config, profile)
    element = ELEMENTS[dtype][0]
    args = CatlassArgs(
        arch=arch, variant=variant, dtype=dtype,
        element_a="int8_t" if variant == "quant" else element,
        element_b="int8_t" if variant == "quant" else element,
        element_c={"quant": "int32_t", "splitk": "float"}.get(variant, element),
        element_out=element,
        layout_a=LAYOUT_TYPES[layout_a], layout_b=LAYOUT_TYPES[layout_b],
        l1=(m, n, k1), l0=(m, n, k0), swizzle_offset=offset, swizzle_direction=direction,
        unit_flag=unit_flag, preload=variant == "preload", split_k=int(config.get("split_k", 1)),
    )
    check_tiles(args)
    return args


def check_tiles(args: CatlassArgs) -> None:
    """The block MMAD's static_asserts, with their amounts, before a compiler sees them."""
    (m, n, k1), (_, _, k0) = args.l1, args.l0
    size = args.element_bytes
    for name, edge in (("tile_m", m), ("tile_n", n), ("tile_k", k0), ("l1_k", k1)):
        if edge < 1 or edge * size % ALIGN_BYTES:
            raise CatlassArgError(f"{name}={edge}: catlass needs every tile edge 32 B aligned "
                                  f"({ALIGN_BYTES // size} elements of {size} B)")
    if k0 > k1 or k1 % k0:
        raise CatlassArgError(f"l1_k={k1}: expected a multiple of tile_k={k0} "
                              "(L0TileShape::K cannot exceed L1TileShape::K)")
    checks = (
        ("L1", (m + n) * k1 * size * STAGES, args.arch.l1,
         f"(tile_m + tile_n) x l1_k x {size} B x {STAGES} stages"),
        ("L0A", m * k0 * size * STAGES, args.arch.l0a, f"tile_m x tile_k x {size} B x {STAGES}"),
        ("L0B", k0 * n * size * STAGES, args.arch.l0b, f"tile_k x tile_n x {size} B x {STAGES}"),
        ("L0C", m * n * ACCUMULATOR_BYTES, args.arch.l0c, "tile_m x tile_n x 4 B"),
    )
    for buffer, need, have, how in checks:
        if need > have:
            raise CatlassArgError(f"{buffer}: {how} = {need} B exceeds the {have} B of "
                                  f"{args.arch.tag}")


def shape_reason(args: CatlassArgs, m: int, k: int, n: int) -> str | None:
    """Why this instantiation cannot run the GEMM (M, K, N), or None."""
    del m, n  # every variant handles M and N tails
    k_tiles = -(-k // args.l1[2])
    if args.variant == "splitk" and args.split_k > k_tiles:
        return (f"split_k={args.split_k}: K={k} has only {k_tiles} L1 K tiles of "
                f"{args.l1[2]} (catlass caps its split factor at that count)")
    return None
