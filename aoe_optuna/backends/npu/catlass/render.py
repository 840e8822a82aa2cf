"""Render a catlass GEMM instantiation: the header of template arguments a user's op includes.

The header (``aoe_catlass_gemm.h``) declares, in namespace ``aoe_catlass``, the chain
catlass's examples spell out by hand: ArchTag, dispatch policy, L1/L0 tile shapes,
GemmTypes, BlockMmad, block epilogue, BlockScheduler, the kernel and
``Catlass::Gemm::Device::DeviceGemm<MatmulKernel>`` as ``MatmulAdapter``. It also
defines ``AOE_CATLASS_ARGS`` (which ``Arguments`` form the kernel takes) so a host
program can construct them without knowing the variant. Every value written comes
from :class:`~aoe_optuna.backends.npu.catlass.args.CatlassArgs`: ints, ``true``/``false``
and names from fixed tables, never text from a spec.

Facts (catlass@0dfcf9df304f297361edab86448ac5ea6aed1647): headers and argument order
as in examples/00_basic_matmul/basic_matmul.cpp, 04_padding_matmul, 09_splitk_matmul,
12_quant_matmul and 21_basic_matmul_preload_zN. ``SplitkMatmul`` chooses its split
factor at run time (``GetSplitkFactor`` in include/catlass/gemm/kernel/splitk_matmul.hpp);
the header derives ``FixedSplitkMatmul`` that hides ``GetWorkspaceSize`` and
``ToUnderlyingArguments`` so the tuned ``split_k`` is the one that runs (``DeviceGemm``
calls both through the kernel type, include/catlass/gemm/device/device_gemm.hpp).
"""

from __future__ import annotations

from collections.abc import Sequence

from aoe_optuna.backends.npu.catlass.args import CATLASS_COMMIT, CatlassArgs

HEADER_FILE = "aoe_catlass_gemm.h"
KERNEL_TYPES = {
    "basic": ("Catlass::Gemm::Kernel::BasicMatmul", "catlass/gemm/kernel/basic_matmul.hpp"),
    "preload": ("Catlass::Gemm::Kernel::BasicMatmulPreload",
                "catlass/gemm/kernel/basic_matmul_preload.hpp"),
    "padding": ("Catlass::Gemm::Kernel::PaddingMatmul", "catlass/gemm/kernel/padding_matmul.hpp"),
    "splitk": ("Catlass::Gemm::Kernel::SplitkMatmul", "catlass/gemm/kernel/splitk_matmul.hpp"),
    "quant": ("Catlass::Gemm::Kernel::QuantMatmulMultiStageWorkspace",
              "catlass/gemm/kernel/quant_matmul_multistage_workspace.hpp"),
}
# AOE_CATLASS_ARGS: the MatmulKernel::Arguments form of each variant (examples 00/04/09/12).
ARGUMENT_FORMS = {
    "basic": ("AOE_CATLASS_ARGS_PLAIN", "{problemShape, ptrA, ptrB, ptrC}"),
    "preload": ("AOE_CATLASS_ARGS_PLAIN", "{problemShape, ptrA, ptrB, ptrC}"),
    "padding": ("AOE_CATLASS_ARGS_PADDING",
                "{problemShape, aoe_catlass::kPaddingAlign, sizeof(float), ptrA, ptrB, ptrC}"),
    "splitk": ("AOE_CATLASS_ARGS_SPLITK",
               "{problemShape, aicCoreNum, sizeof(float), ptrA, ptrB, ptrC}"),
    "quant": ("AOE_CATLASS_ARGS_QUANT",
              "{problemShape, aicCoreNum, ptrA, ptrB, ptrScale, ptrPerTokenScale, ptrD}"),
}
ARG_CODES = {"AOE_CATLASS_ARGS_PLAIN": 0, "AOE_CATLASS_ARGS_PADDING": 1,
             "AOE_CATLASS_ARGS_SPLITK": 2, "AOE_CATLASS_ARGS_QUANT": 3}
COMMON_INCLUDES = (
    "catlass/arch/arch.hpp",
    "catlass/catlass.hpp",
    "catlass/gemm/block/block_mmad.hpp",
    "catlass/gemm/block/block_swizzle.hpp",
    "catlass/gemm/device/device_gemm.hpp",
    "catlass/gemm/dispatch_policy.hpp",
    "catlass/gemm/gemm_type.hpp",
    "catlass/layout/layout.hpp",
)
QUANT_INCLUDES = (
    "catlass/epilogue/block/block_epilogue.hpp",
    "catlass/epilogue/dispatch_policy.hpp",
    "catlass/epilogue/tile/tile_broadcast_mul.hpp",
    "catlass/epilogue/tile/tile_broadcast_one_blk.hpp",
    "catlass/epilogue/tile/tile_swizzle.hpp",
)
PADDING_ALIGN = 256  # elements a padded row is rounded to (examples/04_padding_matmul)
SPLITK_REDUCE_UB_BYTES = 192 * 1024  # the reduce kernel's UB share (examples/09_splitk_matmul)
QUANT_WORKSPACE_STAGES = 2  # examples/12_quant_matmul
QUANT_EPILOGUE_TILE = (32, 256)


def bool_literal(flag: bool) -> str:
    return "true" if flag else "false"


def dispatch_policy(args: CatlassArgs) -> str:
    """The block MMAD's dispatch policy type."""
    if args.variant == "quant":
        # preloadStages, l1Stages, l0AStages, l0BStages, l0CStages, unitFlag, shuffleK (ex. 12)
        return "Catlass::Gemm::MmadAtlasA2PreloadAsyncWithCallback<1, 2, 2, 2, 1, false, true>"
    if args.preload:
        return f"Catlass::Gemm::MmadAtlasA2Preload<{bool_literal(args.unit_flag)}, true>"
    return f"Catlass::Gemm::MmadAtlasA2Pingpong<{bool_literal(args.unit_flag)}>"


def scheduler(args: CatlassArgs) -> str:
    name = "SplitkGemmIdentityBlockSwizzle" if args.variant == "splitk" else \
        "GemmIdentityBlockSwizzle"
    return f"Catlass::Gemm::Block::{name}<{args.swizzle_offset}, {args.swizzle_direction}>"


def includes(args: CatlassArgs) -> list[str]:
    extra = QUANT_INCLUDES if args.variant == "quant" else ()
    return [KERNEL_TYPES[args.variant][1], *COMMON_INCLUDES, *extra]


def type_lines(args: CatlassArgs) -> list[str]:
    """The ``using`` chain, in the order catlass's examples declare it."""
    (m1, n1, k1), (m0, n0, k0) = args.l1, args.l0
    lines = [
        f"using ArchTag = {args.arch.tag};",
        f"using ElementA = {args.element_a};",
        f"using ElementB = {args.element_b};",
        f"using ElementC = {args.element_c};  // what the block MMAD writes",
        f"using ElementOut = {args.element_out};  // what the caller's C holds",
        f"using LayoutA = Catlass::layout::{args.layout_a};",
        f"using LayoutB = Catlass::layout::{args.layout_b};",
        "using LayoutC = Catlass::layout::RowMajor;",
        f"using DispatchPolicy = {dispatch_policy(args)};",
        f"using L1TileShape = Catlass::GemmShape<{m1}, {n1}, {k1}>;",
        f"using L0TileShape = Catlass::GemmShape<{m0}, {n0}, {k0}>;",
        "using AType = Catlass::Gemm::GemmType<ElementA, LayoutA>;",
        "using BType = Catlass::Gemm::GemmType<ElementB, LayoutB>;",
        "using CType = Catlass::Gemm::GemmType<ElementC, LayoutC>;",
        "using BlockMmad = Catlass::Gemm::Block::BlockMmad<DispatchPolicy, L1TileShape, "
        "L0TileShape, AType, BType, CType>;",
    ]
    lines += epilogue_lines(args)
    lines.append(f"using BlockScheduler = {scheduler(args)};")
    lines += kernel_lines(args)
    lines.append("using MatmulAdapter = Catlass::Gemm::Device::DeviceGemm<MatmulKernel>;")
    return lines


def epilogue_lines(args: CatlassArgs) -> list[str]:
    if args.variant != "quant":
        return ["using BlockEpilogue = void;"]
    rows, cols = QUANT_EPILOGUE_TILE
    return [
        "// Per-token dequant on the vector cores: D = C(int32) x scale[n] x perTokenScale[m].",
        "using EpilogueDispatchPolicy = Catlass::Epilogue::EpilogueAtlasA2PerTokenDequant<2>;",
        f"using ScaleType = Catlass::Gemm::GemmType<{args.element_out}, "
        "Catlass::layout::VectorLayout>;",
        f"using PerTokenScaleType = Catlass::Gemm::GemmType<{args.element_out}, "
        "Catlass::layout::VectorLayout>;",
        f"using DType = Catlass::Gemm::GemmType<{args.element_out}, Catlass::layout::RowMajor>;",
        "using FloatRowMajor = Catlass::Gemm::GemmType<float, Catlass::layout::RowMajor>;",
        f"using EpilogueTileShape = Catlass::MatrixShape<{rows}, {cols}>;",
        "using TileRowBroadcastMul = Catlass::Epilogue::Tile::TileRowBroadcastMul<ArchTag, "
        "FloatRowMajor, EpilogueTileShape>;",
        "using TileBroadcastOneBlk = Catlass::Epilogue::Tile::TileBroadcastOneBlk<ArchTag, "
        "FloatRowMajor, EpilogueTileShape::ROW>;",
        "using TileOneBlkColumnBroadcastMul = Catlass::Epilogue::Tile::"
        "TileOneBlkColumnBroadcastMul<ArchTag, FloatRowMajor, EpilogueTileShape>;",
        "using EpilogueTileCopy = Catlass::Epilogue::Tile::TileCopy<ArchTag, CType, ScaleType, "
        "PerTokenScaleType, DType>;",
        "using EpilogueTileScheduler = Catlass::Epilogue::Tile::EpilogueHorizontalTileSwizzle;",
        "using BlockEpilogue = Catlass::Epilogue::Block::BlockEpilogue<EpilogueDispatchPolicy, "
        "CType, ScaleType, PerTokenScaleType, DType, TileRowBroadcastMul, TileBroadcastOneBlk, "
        "TileOneBlkColumnBroadcastMul, EpilogueTileCopy, EpilogueTileScheduler>;",
    ]


def kernel_lines(args: CatlassArgs) -> list[str]:
    kernel = KERNEL_TYPES[args.variant][0]
    if args.variant == "quant":
        return [f"using MatmulKernel = {kernel}<BlockMmad, BlockEpilogue, BlockScheduler, "
                f"{QUANT_WORKSPACE_STAGES}>;"]
    if args.variant != "splitk":
        return [f"using MatmulKernel = {kernel}<BlockMmad, BlockEpilogue, BlockScheduler>;"]
    return [
        f"using ReduceAdd = Catlass::Gemm::Kernel::SplitkReduceAdd<ArchTag, float, ElementOut, 1, "
        f"{SPLITK_REDUCE_UB_BYTES} / sizeof(float)>;",
        f"using CatlassSplitkMatmul = {kernel}<BlockMmad, BlockEpilogue, BlockScheduler, "
        "ReduceAdd>;",
        "using MatmulKernel = FixedSplitkMatmul<CatlassSplitkMatmul, kSplitK>;",
    ]


FIXED_SPLITK = """\
// catlass's SplitkMatmul picks its split factor at run time; this kernel runs kSplitK.
template <class Base, uint32_t SPLIT>
struct FixedSplitkMatmul : public Base {
    using typename Base::Arguments;
    using typename Base::Params;
    static size_t GetWorkspaceSize(const Arguments &args)
    {
        return static_cast<size_t>(args.workspaceElementSize) * args.problemShape.m() *
               args.problemShape.n() * SPLIT;
    }
    static Params ToUnderlyingArguments(const Arguments &args, uint8_t *workspace)
    {
        const Catlass::GemmCoord &s = args.problemShape;
        return Params{s,
                      args.ptrA,
                      Base::LayoutA::template MakeLayout<typename Base::ElementA>(s.m(), s.k()),
                      args.ptrB,
                      Base::LayoutB::template MakeLayout<typename Base::ElementB>(s.k(), s.n()),
                      args.ptrC,
                      Base::LayoutC::template MakeLayout<typename Base::ElementC>(s.m(), s.n()),
                      workspace,
                      SPLIT};
    }
};
"""


def header_prelude(heads: Sequence[str]) -> list[str]:
    """What every rendered catlass header starts with after its comment: the include
    guard, catlass's shape-rank default, its headers and the argument-form codes (one
    kernel's header and a kernel set's list of instantiations alike)."""
    return [
        "#pragma once",
        "#ifndef K_MAX_SHAPE_DIM",
        "#define K_MAX_SHAPE_DIM 0",
        "#endif",
        "",
        *(f'#include "{path}"' for path in heads),
        "",
        *(f"#define {name} {code}" for name, code in ARG_CODES.items()),
    ]


def render_header(args: CatlassArgs, provenance: Sequence[str] = ()) -> str:
    """The instantiation header; ``provenance`` lines go into its leading comment."""
    macro, form = ARGUMENT_FORMS[args.variant]
    lines = [
        "/*",
        " * aoe_catlass_gemm.h: a tuned catlass GEMM instantiation, rendered by aoe_optuna",
        " * (backends/npu/catlass/render.py); regenerate it instead of editing it.",
        f" * Written against catlass@{CATLASS_COMMIT}.",
        *(f" * {line}" for line in provenance),
        " *",
        " * Use: aoe_catlass::MatmulAdapter op; aoe_catlass::MatmulKernel::Arguments args"
        f"{form};",
        " *      op.CanImplement(args);",
        " *      op.Initialize(args, <device workspace of op.GetWorkspaceSize(args) bytes>);",
        " *      op(stream, aicCoreNum[, hardwareSyncAddr]);",
        " * Compile as Ascend C (bisheng) with -I<catlass>/include "
        f"--npu-arch=dav-{args.arch.npu_arch} -DCATLASS_ARCH={args.arch.npu_arch}.",
        " */",
        *header_prelude(includes(args)),
        f"#define AOE_CATLASS_ARGS {macro}",
        f"#define AOE_CATLASS_VARIANT \"{args.variant}\"",
        "",
        "namespace aoe_catlass {",
        "",
        f"constexpr uint32_t kSplitK = {int(args.split_k)};",
        f"constexpr uint32_t kPaddingAlign = {PADDING_ALIGN};",
        f"constexpr uint32_t kSwizzleOffset = {args.swizzle_offset};",
        f"constexpr uint32_t kSwizzleDirection = {args.swizzle_direction};",
        "",
    ]
    if args.variant == "splitk":
        lines += [FIXED_SPLITK]
    lines += type_lines(args)
    lines += ["", "}  // namespace aoe_catlass", ""]
    return "\n".join(lines)
