"""Render catlass's flash-attention-infer instantiation for a tuned decode or prefill tiling.

catlass@0dfcf9df304f297361edab86448ac5ea6aed1647 has no attention kernel under
``include/catlass``: its flash attention is the example ``examples/23_flash_attention_infer``
(``FAInferKernel`` in ``fai_kernel.cpp``, host tiling in ``fai_tiling.cpp``), built from
the library's block pieces (``BlockMmad`` over ``MmadAtlasA2FAIQK``/``FAIPV`` and their
tail policies, the ``EpilogueAtlasA2OnlineSoftmax``/``RescaleO`` block epilogues). The
header ``aoe_catlass_fai.h`` declares that chain with the problem's values and
instantiates the example's kernel class; the build includes the example's sources from
the catlass checkout (nothing of catlass is copied here).

Most of the tuned tiling has no template argument there: the example fixes them in
code. Each tuned value is written into the header as a ``kTuned*`` constant beside what
catlass runs, and :func:`counterparts` says, per parameter, which it is. Facts, all at
that commit: ``block_mmad_fai_qk_normal.hpp`` and ``block_mmad_fai_pv_normal.hpp``
(``KV_SPLIT_SIZE`` 128 tokens per MMAD and per L1 load, ``UNIT_BLOCK_STACK_NUM`` 4 and
``KV_BASE_BLOCK`` 512 tokens per softmax step, ``STAGES`` 2 from the dispatch policies);
``fai_kernel.cpp`` (``preLaunch`` 2, tasks dealt ``taskIdx += coreNum``, no KV split);
``kernel_common.hpp`` (``GetQSBlockTile`` 128 query rows, ``GetQNBlockTile``
128 / qSeqlen heads); ``fai_tiling.cpp`` (``blockSize`` must be 128; the paged cache
holds ``blockSize`` tokens x ``kvHeads * embed`` per page, i.e. BSND).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aoe_optuna.backends.npu.catlass.args import (
    CATLASS_COMMIT,
    ELEMENTS,
    ArchInfo,
    CatlassArgError,
    arch_for,
)
from aoe_optuna.backends.npu.catlass.build import (
    CATLASS_RUN_MODES,
    TEMPLATES,
    CatlassTarget,
    catlass_program,
    render_cmake,
)
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget, ProgramUnavailable
from aoe_optuna.backends.npu.sources import (
    BENCH_COMMON_FILE,
    HOST_NUMBERS_FILE,
    SHARED,
    RenderError,
    check_soc,
)
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention

FAI_HEADER = "aoe_catlass_fai.h"
FAI_EXAMPLE = "examples/23_flash_attention_infer"
Q_ROWS = 128  # GetQSBlockTile (kernel_common.hpp), and the rows the L1 Q tile holds
KV_STEP = 128  # KV_SPLIT_SIZE: tokens per MMAD and per L1 K/V load (= the page)
SOFTMAX_BLOCK = 512  # KV_BASE_BLOCK = UNIT_BLOCK_STACK_NUM x 128 tokens per softmax step
STAGES = 2  # the FAI dispatch policies' STAGES: ping-pong L1/L0 buffers
PAGE_TOKENS = 128  # fai_tiling.cpp refuses any other blockSize
FRACTAL = 16
# fai_tiling.cpp MaskType: 1 reads a global mask, which gen_data.py builds as
# triu(ones(1024, 1024), 1) (1 = masked) for a causal prefill.
MASK_NONE, MASK_GLOBAL = 0, 1


@dataclass(frozen=True)
class Counterpart:
    """One tuned parameter and what catlass's kernel runs for it."""

    param: str
    tuned: str
    catlass: str
    matches: bool
    where: str  # the catlass source that fixes it


@dataclass(frozen=True)
class FaiArgs:
    """Everything the instantiation is made of, as plain values."""

    arch: ArchInfo
    phase: str  # decode | prefill
    dtype: str
    element: str
    head_dim: int
    paged: bool
    mask_type: int
    tuned: dict[str, int | str]
    counterparts: tuple[Counterpart, ...]

    @property
    def l1_tile(self) -> tuple[int, int, int]:
        """L1TileShape M, N, K: the L1 buffers of Q rows, K/V tokens and head dim."""
        return Q_ROWS, KV_STEP, _round_up(self.head_dim, FRACTAL)


def _round_up(x: int, to: int) -> int:
    return -(-x // to) * to


def _pair(param: str, tuned: Any, catlass: Any, where: str) -> Counterpart:
    return Counterpart(param, str(tuned), str(catlass), str(tuned) == str(catlass), where)


def counterparts(problem: DecodeAttention | PrefillAttention,
                 config: Mapping[str, Any]) -> tuple[Counterpart, ...]:
    """Per tuned parameter: the value catlass's kernel runs, and whether it is the tuned one."""
    qk = "block_mmad_fai_qk_normal.hpp"
    if isinstance(problem, DecodeAttention):
        return (
            _pair("kv_split", config["kv_split"], 1, "fai_kernel.cpp: no KV split"),
            _pair("block_tile", config["block_tile"], SOFTMAX_BLOCK, f"{qk}: KV_BASE_BLOCK"),
            _pair("l1_tile", config["l1_tile"], KV_STEP, f"{qk}: KV_SPLIT_SIZE"),
            _pair("l0_tile", config["l0_tile"], KV_STEP, f"{qk}: KV_SPLIT_SIZE"),
            _pair("pipeline", config["pipeline"], STAGES, "dispatch_policy.hpp: STAGES"),
            _pair("kv_layout", problem.kv_layout, "BSND",
                  "fai_kernel.cpp: strideKV = kvHeads * embed"),
        )
    return (
        _pair("q_tile", config["q_tile"], Q_ROWS, "kernel_common.hpp: GetQSBlockTile"),
        _pair("kv_tile", config["kv_tile"], SOFTMAX_BLOCK, f"{qk}: KV_BASE_BLOCK"),
        _pair("l1_tile", config["l1_tile"], KV_STEP, f"{qk}: KV_SPLIT_SIZE"),
        _pair("pipeline", config["pipeline"], STAGES, "dispatch_policy.hpp: STAGES"),
        _pair("dealing", config["dealing"], "cyclic", "fai_kernel.cpp: taskIdx += coreNum"),
    )


def problem_reason(problem: DecodeAttention | PrefillAttention | MlaDecodeAttention,
                   dtype: str, profile: SocProfile) -> str | None:
    """Why catlass's flash attention cannot run ``problem`` whatever the tiling, or None:
    every refusal here is about the problem, the dtype or the SoC, none about a tiling."""
    try:
        arch = arch_for(profile)
    except CatlassArgError as exc:
        return str(exc)
    if not isinstance(problem, DecodeAttention | PrefillAttention):
        return ("MLA: flash-attention-infer takes one head width for Q, K and V; "
                "MLA decode runs catlass's examples/19_mla (catlass/mla.py)")
    if isinstance(problem, PrefillAttention) and problem.window is not None:
        return (f"sliding window {problem.window}: catlass's flash attention "
                "has no band mask (fai_kernel.cpp: none or causal)")
    if isinstance(problem, PrefillAttention) and problem.v_head_dim is not None:
        return (f"V width {problem.v_head_dim} beside head_dim {problem.head_dim}: catlass's "
                "flash attention takes one head width for Q, K and V")
    if dtype not in ELEMENTS:
        return f"dtype {dtype}: catlass's flash attention implements {sorted(ELEMENTS)}"
    if problem.head_dim % FRACTAL:
        return (f"head_dim {problem.head_dim}: catlass's flash attention "
                f"needs a multiple of {FRACTAL}")
    l1_bytes = 2 * (Q_ROWS + STAGES * KV_STEP) * _round_up(problem.head_dim, FRACTAL) * 2
    if l1_bytes > arch.l1:  # QK and PV blocks each: L1A + STAGES x L1B (fai_kernel.cpp)
        return (f"head_dim {problem.head_dim}: catlass's QK and PV L1 tiles "
                f"take {l1_bytes // 1024} KiB, L1 has {arch.l1 // 1024} KiB")
    if isinstance(problem, DecodeAttention) and problem.page_tokens != PAGE_TOKENS:
        return (f"page_tokens {problem.page_tokens}: catlass's flash attention runs "
                f"{PAGE_TOKENS}-token pages only (fai_tiling.cpp)")
    return None


def fai_args(problem: DecodeAttention | PrefillAttention | MlaDecodeAttention,
             config: Mapping[str, Any],
             dtype: str, profile: SocProfile) -> FaiArgs:
    """The instantiation for ``problem`` under ``config``; CatlassArgError (one line) when
    catlass's kernel cannot run the problem at all (:func:`problem_reason`) or the config
    lacks a tuned parameter. Every tiling of the problem's space has an instantiation:
    catlass fixes its tiles in code, the tuned values ride along as constants."""
    why = problem_reason(problem, dtype, profile)
    if why is not None:
        raise CatlassArgError(why)
    assert isinstance(problem, DecodeAttention | PrefillAttention)
    arch = arch_for(profile)
    if isinstance(problem, DecodeAttention):
        phase, paged, mask = "decode", True, MASK_NONE
        names = ("kv_split", "block_tile", "l1_tile", "l0_tile", "pipeline")
    else:
        phase, paged = "prefill", False
        mask = MASK_GLOBAL if problem.causal else MASK_NONE
        names = ("q_tile", "kv_tile", "l1_tile", "pipeline", "dealing")
    missing = [n for n in names if n not in config]
    if missing:
        raise CatlassArgError(f"{phase} attention config lacks {missing}")
    tuned: dict[str, int | str] = {
        n: (str(config[n]) if n == "dealing" else int(config[n])) for n in names}
    return FaiArgs(arch, phase, dtype, ELEMENTS[dtype][0], int(problem.head_dim), paged, mask,
                   tuned, counterparts(problem, tuned))


def _constant(name: str, value: int | str) -> str:
    if isinstance(value, str):
        return f'constexpr const char *kTuned{_camel(name)} = "{value}";'
    return f"constexpr uint32_t kTuned{_camel(name)} = {int(value)};"


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def type_lines(args: FaiArgs) -> list[str]:
    """The ``using`` chain of fai_kernel.cpp's entry, with this problem's values."""
    m, n, k = args.l1_tile
    paged = "true" if args.paged else "false"
    return [
        f"using ArchTag = {args.arch.tag};",
        f"using ElementQ = {args.element};",
        "using ElementS = float;",
        "using ElementOTmp = float;",
        "using LayoutQ = Catlass::layout::RowMajor;",
        "using LayoutK = Catlass::layout::ColumnMajor;",
        "using LayoutV = Catlass::layout::RowMajor;",
        "using RowMajor = Catlass::layout::RowMajor;",
        f"// L1TileShape: {m} Q rows, {n} K/V tokens per L1 load, K = head_dim rounded to "
        f"{FRACTAL} ({args.head_dim}).",
        f"using L1TileShape = Catlass::GemmShape<{m}, {n}, {k}>;",
        "using L0TileShape = L1TileShape;",
        "using QType = Catlass::Gemm::GemmType<ElementQ, LayoutQ>;",
        "using KType = Catlass::Gemm::GemmType<ElementQ, LayoutK>;",
        "using VType = Catlass::Gemm::GemmType<ElementQ, LayoutV>;",
        "using SType = Catlass::Gemm::GemmType<ElementS, RowMajor>;",
        "using PType = Catlass::Gemm::GemmType<ElementQ, RowMajor>;",
        "using MaskType = Catlass::Gemm::GemmType<ElementQ, RowMajor>;",
        "using OTmpType = Catlass::Gemm::GemmType<ElementOTmp, RowMajor>;",
        "using OType = Catlass::Gemm::GemmType<ElementQ, RowMajor>;",
        "using OUpdateType = Catlass::Gemm::GemmType<float, RowMajor>;",
        "using BlockMmadQK = Catlass::Gemm::Block::BlockMmad<"
        f"Catlass::Gemm::MmadAtlasA2FAIQK<{paged}, false>, L1TileShape, L0TileShape, "
        "QType, KType, SType>;",
        "using BlockMmadQKTail = Catlass::Gemm::Block::BlockMmad<"
        f"Catlass::Gemm::MmadAtlasA2FAITailQK<{paged}, false>, L1TileShape, L0TileShape, "
        "QType, KType, SType>;",
        "using BlockMmadPV = Catlass::Gemm::Block::BlockMmad<"
        f"Catlass::Gemm::MmadAtlasA2FAIPV<{paged}, false>, L1TileShape, L0TileShape, "
        "PType, VType, OTmpType>;",
        "using BlockMmadPVTail = Catlass::Gemm::Block::BlockMmad<"
        f"Catlass::Gemm::MmadAtlasA2FAITailPV<{paged}, false>, L1TileShape, L0TileShape, "
        "PType, VType, OTmpType>;",
        "using EpilogueOnlineSoftmax = Catlass::Epilogue::Block::BlockEpilogue<"
        "Catlass::Epilogue::EpilogueAtlasA2OnlineSoftmax, PType, SType, MaskType>;",
        "using EpilogueRescaleO = Catlass::Epilogue::Block::BlockEpilogue<"
        "Catlass::Epilogue::EpilogueAtlasA2RescaleO, OType, OTmpType, OUpdateType>;",
        "using FaiKernel = FAInferKernel<BlockMmadQK, BlockMmadPV, BlockMmadQKTail, "
        f"BlockMmadPVTail, EpilogueOnlineSoftmax, EpilogueRescaleO, {paged}>;",
    ]


def render_fai_header(args: FaiArgs, provenance: Sequence[str] = ()) -> str:
    """``aoe_catlass_fai.h``; ``provenance`` lines go into its leading comment."""
    table = [f" *   {c.param:<10} tuned {c.tuned:<8} catlass runs {c.catlass:<8} "
             f"{'(same)' if c.matches else 'NO COUNTERPART'}  [{c.where}]"
             for c in args.counterparts]
    lines = [
        "/*",
        f" * {FAI_HEADER}: catlass's flash-attention-infer kernel instantiated for a tuned "
        f"{args.phase} attention,",
        " * rendered by aoe_optuna (backends/npu/catlass/fai.py); regenerate it instead of "
        "editing it.",
        f" * Written against catlass@{CATLASS_COMMIT}; FAInferKernel, FATilingData and",
        f" * FAIKernelParams come from {FAI_EXAMPLE}/fai_kernel.cpp (not include/catlass).",
        *(f" * {line}" for line in provenance),
        " *",
        " * The tuned tiling against what catlass's kernel runs (fixed in its code, not a "
        "template",
        " * argument): a parameter marked NO COUNTERPART is not what this kernel runs; its "
        "tuned",
        " * value is kept below as kTuned<Param> for a kernel that takes it.",
        *table,
        " *",
        f" * Compile as Ascend C (bisheng, mix AIC+AIV) with -I<catlass>/include "
        f"-I<catlass>/{FAI_EXAMPLE}",
        f" * --npu-arch=dav-{args.arch.npu_arch} -DCATLASS_ARCH={args.arch.npu_arch}.",
        " */",
        "#pragma once",
        '#include "fai_kernel.cpp"  // FAInferKernel and the catlass headers it includes',
        "",
        f"#define AOE_FAI_PHASE \"{args.phase}\"",
        f"#define AOE_FAI_PAGED {int(args.paged)}",
        f"#define AOE_FAI_MASK_TYPE {args.mask_type}",
        f"#define AOE_FAI_HEAD_DIM {args.head_dim}",
        f"#define AOE_INPUT_BF16 {int(args.dtype == 'bf16')}",
        "",
        "namespace aoe_catlass_fai {",
        "",
        f"constexpr uint32_t kPageTokens = {PAGE_TOKENS};  // fai_tiling.cpp: blockSize",
        f"constexpr uint32_t kMaskType = {args.mask_type};  // 0 none, 1 the global causal mask",
        *(_constant(name, value) for name, value in args.tuned.items()),
        "",
        *type_lines(args),
        "",
        "}  // namespace aoe_catlass_fai",
        "",
    ]
    return "\n".join(lines)


FAI_BENCH = "catlass_fai_bench.cpp"
FAI_TARGET_NAME = "fai_bench"


def fai_target() -> CatlassTarget:
    """The CMake target of the attention build: the example's directory on the include
    path (fai_kernel.cpp, fai_tiling.cpp, kernel_common.hpp), cube and vector cores."""
    return CatlassTarget("aoe_catlass_fai", FAI_BENCH, FAI_TARGET_NAME, FAI_EXAMPLE, mix=True)


def render_fai_project(args: FaiArgs, profile: SocProfile, run_mode: str,
                       build_system: str = "asc",
                       provenance: Sequence[str] = ()) -> dict[str, str]:
    """File name -> text of the CMake project that builds, checks and times the kernel."""
    if run_mode not in CATLASS_RUN_MODES:
        raise RenderError(f"run_mode {run_mode!r}: the catlass kernel runs in "
                          f"{list(CATLASS_RUN_MODES)}")
    return {
        FAI_HEADER: render_fai_header(args, provenance),
        FAI_BENCH: TEMPLATES.text(FAI_BENCH),
        BENCH_COMMON_FILE: SHARED.text(BENCH_COMMON_FILE),
        HOST_NUMBERS_FILE: SHARED.text(HOST_NUMBERS_FILE),
        "CMakeLists.txt": render_cmake(None, run_mode, (), build_system, check_soc(profile),
                                       fai_target(), args.arch.npu_arch),
    }


def fai_problem_args(problem: DecodeAttention | PrefillAttention) -> list[str]:
    """The program's problem arguments (decode: one query token):
    ``batch q_seqlen kv_seqlen q_heads kv_heads``; the timing arguments follow."""
    if isinstance(problem, DecodeAttention):
        q_len, kv_len = 1, problem.context
    else:
        q_len, kv_len = problem.seq_len, problem.keys
    return [str(problem.batch), str(q_len), str(kv_len), str(problem.q_heads),
            str(problem.kv_heads)]


def fai_program(problem: DecodeAttention | PrefillAttention, config: Mapping[str, Any],
                dtype: str, profile: SocProfile, target: NpuTarget,
                provenance: Sequence[str] = ()) -> KernelProgram:
    """The build tree that times ``problem`` under ``config`` on the target and checks O
    against the host reference; ProgramUnavailable (one line) where catlass's kernel
    cannot run the problem or cannot be built there."""
    try:
        args = fai_args(problem, config, dtype, profile)
    except CatlassArgError as exc:
        phase = "decode" if isinstance(problem, DecodeAttention) else "prefill"
        raise ProgramUnavailable(f"{phase} attention: {exc}") from None
    if target.run_mode not in CATLASS_RUN_MODES:
        raise ProgramUnavailable(f"run_mode={target.run_mode}: catlass kernels run in "
                                 f"{list(CATLASS_RUN_MODES)}")
    files = render_fai_project(args, profile, target.run_mode, target.catlass_build_system,
                               provenance)
    notes = [f"{c.param}={c.tuned}: no catlass counterpart (it runs {c.catlass})"
             for c in args.counterparts if not c.matches]
    return catlass_program(files, args, fai_target(), fai_problem_args(problem), target,
                           f"catlass flash-attention-infer ({args.phase}, {FAI_EXAMPLE})",
                           notes)
