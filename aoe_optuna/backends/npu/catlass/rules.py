"""What :func:`.args.catlass_args` refuses, as rules of a catlass study's space.

A study whose space has catlass's knobs exports a catlass instantiation header
(``aoe-tune export --catlass-header``) and, on the npu backend, builds the same
instantiation. Each refusal of :mod:`.args` (and of the catlass build's
compile options, :data:`.build.NO_CATLASS_MEANING`) is one rule here, so
a sampler never proposes a config that catlass has no kernel for: the simulator
would measure it, and its export would fail after the study. The rules read the
same constants as the refusals; a test draws feasible configs of every shipped
spec and renders each, and checks that what the rules forbid is refused.

Facts from catlass@0dfcf9df304f297361edab86448ac5ea6aed1647 (paths in that tree):

* ``include/catlass/gemm/dispatch_policy.hpp``: ``MmadAtlasA2Pingpong`` and
  ``MmadAtlasA2Preload`` both have ``STAGES = 2`` (two L0 buffers, two L1 stages);
  int8 runs with ``ENABLE_UNIT_FLAG`` false;
* ``include/catlass/gemm/kernel/basic_matmul_preload.hpp``: the one plain kernel
  whose block loop hands the preload block MMAD the next block's operands;
  ``splitk_matmul.hpp`` and ``padding_matmul.hpp`` call ``blockMmad`` with one
  block's operands, i.e. a pingpong block MMAD;
* ``padding_matmul.hpp``: ``PaddingMatrixND`` pads row- and column-major operands;
* ``quant_matmul_multistage_workspace.hpp`` with examples/12's per-token dequant
  epilogue: int8 A and B, row- or column-major, fp16 out;
* ``include/catlass/gemm/block/block_mmad_pingpong.hpp``/``block_mmad_preload.hpp``
  and ``include/catlass/gemm/helper.hpp``: every tile edge 32 B aligned, L0 K a
  divisor of L1 K, the L1/L0A/L0B/L0C buffers x STAGES within ``AtlasA2``'s sizes
  (``include/catlass/arch/arch.hpp``).

The product-level refusals (a SoC other than Atlas A2, a dtype catlass has no
element for) are not rules: no tiling fixes them; :func:`product_reason` says so.
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.backends.npu.catlass.args import (
    ACCUMULATOR_BYTES,
    ALIGN_BYTES,
    ELEMENTS,
    LEGACY_LAYOUTS,
    STAGES,
    ArchInfo,
    CatlassArgError,
    arch_for,
)
from aoe_optuna.backends.npu.catlass.build import NO_CATLASS_MEANING
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.constraints import Columns
from aoe_optuna.space.kernel_rule import KernelRule
from aoe_optuna.space.params import LAYOUTS, OPERAND_LAYOUTS

ZN = OPERAND_LAYOUTS.index("zN")
ROW_MAJOR = OPERAND_LAYOUTS.index("row_major")
LEGACY_ZN = LAYOUTS.index(next(k for k, v in LEGACY_LAYOUTS.items() if v == "zN"))
SPLITK = "include/catlass/gemm/kernel/splitk_matmul.hpp"
PADDING = "include/catlass/gemm/kernel/padding_matmul.hpp"
POLICIES = "include/catlass/gemm/dispatch_policy.hpp"
QUANT = "include/catlass/gemm/kernel/quant_matmul_multistage_workspace.hpp"
BLOCK_MMAD = "include/catlass/gemm/block/block_mmad_pingpong.hpp"


def product_reason(profile: SocProfile, dtype: str) -> str | None:
    """Why catlass has no kernel for this SoC and dtype whatever the tiling, or None."""
    try:
        arch_for(profile)
    except CatlassArgError as exc:
        return str(exc)
    if dtype not in ELEMENTS:
        return (f"dtype {dtype}: the catlass kernel is rendered for {sorted(ELEMENTS)} "
                "(int8 through quantization=true)")
    return None


def _zn_operand(c: Columns) -> np.ndarray:
    """Whether A or B is zN: its own layout, or the legacy ``layout`` where it is row_major
    (:func:`.args.operand_layouts`)."""
    legacy = c["layout"] == LEGACY_ZN
    a = (c["layout_a"] == ZN) | ((c["layout_a"] == ROW_MAJOR) & legacy)
    b = (c["layout_b"] == ZN) | ((c["layout_b"] == ROW_MAJOR) & legacy)
    return a | b


def _l1_k(c: Columns, profile: SocProfile) -> np.ndarray:
    return np.where(c["l1_k"] > 0, c["l1_k"], c["tile_k"] * profile.l1_k_steps)


def _bytes(c: Columns, dtype: str) -> np.ndarray:
    return np.where(c["quantization"] != 0, 1, ELEMENTS[dtype][1])


def catlass_rules(profile: SocProfile, dtype: str) -> list[KernelRule]:
    """The rules of a catlass study on ``profile`` for GEMMs of ``dtype``; none where
    catlass has no kernel at all (:func:`product_reason`)."""
    if product_reason(profile, dtype) is not None:
        return []
    arch = arch_for(profile)
    layouts = frozenset({"layout", "layout_a", "layout_b"})
    tiles = frozenset({"tile_m", "tile_n", "tile_k", "l1_k", "quantization"})
    rules = [
        KernelRule(
            "catlass_stages", frozenset({"pipeline", "l1_prefetch"}),
            lambda c: (c["pipeline"] == 2) & (c["l1_prefetch"] != 0),
            f"catlass's dispatch policies double-buffer L0 and L1 (STAGES={STAGES}): "
            f"pipeline=2 and l1_prefetch=1 only [{POLICIES}]"),
        KernelRule(
            "catlass_one_kernel", frozenset({"quantization", "split_k", "padding"}),
            lambda c: ((c["quantization"] != 0).astype(int) + (c["split_k"] > 1)
                       + (c["padding"] != 0)) <= 1,
            "the catlass kernels rendered here take one of quantization, split-K and "
            "padding [include/catlass/gemm/kernel/]"),
        KernelRule(
            "catlass_preload", frozenset({"preload", "split_k", "padding"}),
            lambda c: (c["preload"] == 0) | ((c["split_k"] == 1) & (c["padding"] == 0)),
            "catlass's split-K and padding kernels call a pingpong block MMAD; only "
            f"BasicMatmulPreload preloads [{SPLITK}, {PADDING}]"),
        KernelRule(
            "catlass_int8_unit_flag", frozenset({"quantization", "unit_flag"}),
            lambda c: (c["quantization"] == 0) | (c["unit_flag"] == 0),
            f"catlass runs int8 inputs with ENABLE_UNIT_FLAG false [{POLICIES}]"),
        KernelRule(
            "catlass_padding_layout", layouts | {"padding"},
            lambda c: (c["padding"] == 0) | ~_zn_operand(c),
            f"catlass's PaddingMatmul pads row- and column-major operands only [{PADDING}]"),
        KernelRule(
            "catlass_int8_layout", layouts | {"quantization"},
            lambda c: (c["quantization"] == 0) | ~_zn_operand(c),
            f"the catlass quant matmul covers row- and column-major operands only [{QUANT}]"),
        KernelRule(
            "catlass_build_options", frozenset(NO_CATLASS_MEANING),
            lambda c: np.logical_and.reduce([c[n] == v for n, v in NO_CATLASS_MEANING.items()]),
            "the catlass kernel has no such knob (it builds as "
            + ", ".join(f"{n}={v}" for n, v in NO_CATLASS_MEANING.items()) + ")"),
        KernelRule(
            "catlass_tile_align", tiles,
            lambda c: _aligned(c, profile, dtype),
            f"catlass needs every tile edge {ALIGN_BYTES} B aligned (int8: 32 elements) "
            f"[include/catlass/gemm/helper.hpp]"),
        KernelRule(
            "catlass_l1_k", frozenset({"tile_k", "l1_k"}),
            lambda c: (_l1_k(c, profile) >= c["tile_k"]) & (_l1_k(c, profile) % c["tile_k"] == 0),
            f"L0TileShape::K must divide L1TileShape::K [{BLOCK_MMAD}]"),
        KernelRule(
            "catlass_buffers", tiles,
            lambda c: _fits(c, profile, dtype, arch),
            f"catlass's L1, L0A, L0B tiles x {STAGES} stages and the fp32 L0C tile must "
            f"fit {arch.tag} [{BLOCK_MMAD}, include/catlass/arch/arch.hpp]"),
    ]
    if dtype != "fp16":
        rules.append(KernelRule(
            "catlass_int8_dtype", frozenset({"quantization"}),
            lambda c: c["quantization"] == 0,
            f"the catlass per-token dequant epilogue rendered here writes fp16 only, not "
            f"{dtype} [examples/12_quant_matmul]"))
    return rules


def _aligned(c: Columns, profile: SocProfile, dtype: str) -> np.ndarray:
    size = _bytes(c, dtype)
    edges = (c["tile_m"], c["tile_n"], c["tile_k"], _l1_k(c, profile))
    return np.logical_and.reduce([(e >= 1) & (e * size % ALIGN_BYTES == 0) for e in edges])


def _fits(c: Columns, profile: SocProfile, dtype: str, arch: ArchInfo) -> np.ndarray:
    size = _bytes(c, dtype)
    m, n, k0, k1 = c["tile_m"], c["tile_n"], c["tile_k"], _l1_k(c, profile)
    return ((m + n) * k1 * size * STAGES <= arch.l1) & (m * k0 * size * STAGES <= arch.l0a) & (
        k0 * n * size * STAGES <= arch.l0b) & (m * n * ACCUMULATOR_BYTES <= arch.l0c)
