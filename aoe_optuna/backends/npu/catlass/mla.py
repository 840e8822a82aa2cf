"""Render catlass's MLA decode kernel (``examples/19_mla``) for a tuned MLA tiling, with
a host program that times it and checks O.

At catlass@0dfcf9df304f297361edab86448ac5ea6aed1647 the MLA kernel is an example, not
part of ``include/catlass``: ``mla_kernel.cpp`` defines ``template <class Dtype>
CATLASS_GLOBAL void MLA(...)`` (its ``using`` chain fixed inside: ``L1TileShape<128,
128, 576>``, ``MmadAtlasA2MLAQK``/``MLAPV``, the ``EpilogueAtlasA2MLASoftmax``/
``MLARescaleO``/``MLAFDRescaleO`` block epilogues), and ``mla_tiling.cpp``
(``MLATiling::GetMLATilingParam``) computes the host tiling: the heads per task
(``GetQNBlockTile``: min(128, heads) for one query token) and the KV split
(``GetKVSplitParam``, from the core count). The example's ``mla.cpp`` builds both as
one ``mix`` executable (its CMakeLists.txt) and launches ``MLA<half>`` or
``MLA<bfloat16_t>``; for 128 heads it takes the ``MLATp1Spec``/``AMLATp1Spec``
kernels instead, with another tiling layout.

The header ``aoe_catlass_mla.h`` includes ``mla_kernel.cpp`` from the checkout and
names the element type; the tuned values ride along as ``kTuned*`` constants, each
marked against what catlass runs (:func:`counterparts`): none of them is a template
argument there. The host program ``templates/catlass_mla_bench.cpp`` includes
``mla_tiling.cpp`` (catlass's own tiling and workspace sizes), as the FAI program
includes ``fai_tiling.cpp``.
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
from aoe_optuna.backends.npu.catlass.fai import Counterpart
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget, ProgramUnavailable
from aoe_optuna.backends.npu.sources import BENCH_COMMON_FILE, HOST_NUMBERS_FILE, SHARED, check_soc
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.mla_attention import MlaDecodeAttention

MLA_HEADER = "aoe_catlass_mla.h"
MLA_BENCH = "catlass_mla_bench.cpp"
MLA_EXAMPLE = "examples/19_mla"
MLA_TARGET_NAME = "mla_bench"
LATENT = 512  # mla.cpp embeddingSize; L1TileShape::K = 512 + 64 ("must be embedding")
ROPE = 64  # mla.cpp embeddingSizeRope
PAGE_TOKENS = 128  # mla_tiling.cpp: "blockSize != 128 is not supported"
SPEC_HEADS = 128  # mla.cpp: 128 heads run the Tp1Spec kernels, not MLA<Dtype>
QN_TILE_MAX = 128  # mla_tiling.h QN_TILE_LIST[0]: the heads per task for one query token
TUNED = ("head_tile", "kv_split", "block_pages", "resident", "pipeline")


@dataclass(frozen=True)
class MlaArgs:
    """Everything the instantiation is made of, as plain values."""

    arch: ArchInfo
    dtype: str
    element: str
    tuned: dict[str, int]
    counterparts: tuple[Counterpart, ...]


def counterparts(problem: MlaDecodeAttention,
                 config: Mapping[str, Any]) -> tuple[Counterpart, ...]:
    """Per tuned parameter: what catlass's MLA kernel runs, and whether it is the tuned value."""
    heads = min(QN_TILE_MAX, problem.q_heads)

    def pair(param: str, catlass: Any, where: str) -> Counterpart:
        return Counterpart(param, str(config[param]), str(catlass),
                           str(config[param]) == str(catlass), where)

    return (
        pair("head_tile", heads, "mla_tiling.cpp: GetQNBlockTile"),
        pair("kv_split", "host tiling", "mla_tiling.cpp: GetKVSplitParam (core count)"),
        pair("block_pages", "fixed", "mla_kernel.cpp: L1TileShape N = one 128-token page"),
        pair("resident", "fixed", "mla_kernel.cpp: MmadAtlasA2MLAPV"),
        pair("pipeline", "fixed", "mla_kernel.cpp: MLAKernel's stages"),
    )


def problem_reason(problem: MlaDecodeAttention, dtype: str, profile: SocProfile) -> str | None:
    """Why catlass's MLA kernel cannot run ``problem`` whatever the tiling, or None."""
    try:
        arch_for(profile)
    except CatlassArgError as exc:
        return str(exc)
    if dtype not in ELEMENTS:
        return f"dtype {dtype}: catlass's MLA kernel implements {sorted(ELEMENTS)}"
    if (problem.kv_lora_rank, problem.qk_rope_head_dim) != (LATENT, ROPE):
        return (f"latent {problem.kv_lora_rank} + rope {problem.qk_rope_head_dim}: catlass's "
                f"MLA kernel is fixed at {LATENT} + {ROPE} (mla_kernel.cpp L1TileShape K 576)")
    if problem.page_tokens != PAGE_TOKENS:
        return (f"page_tokens {problem.page_tokens}: catlass's MLA tiling runs "
                f"{PAGE_TOKENS}-token pages only (mla_tiling.cpp)")
    if problem.q_heads == SPEC_HEADS:
        return (f"{SPEC_HEADS} heads: catlass's example runs its Tp1Spec kernels "
                "(mla_kernel_tp1_spec.cpp), which are not rendered")
    return None


def mla_args(problem: MlaDecodeAttention, config: Mapping[str, Any], dtype: str,
             profile: SocProfile) -> MlaArgs:
    """The instantiation for ``problem`` under ``config``; CatlassArgError (one line) where
    catlass's kernel cannot run the problem or the config lacks a tuned parameter."""
    why = problem_reason(problem, dtype, profile)
    if why is not None:
        raise CatlassArgError(why)
    missing = [n for n in TUNED if n not in config]
    if missing:
        raise CatlassArgError(f"MLA attention config lacks {missing}")
    tuned = {n: int(config[n]) for n in TUNED}
    return MlaArgs(arch_for(profile), dtype, ELEMENTS[dtype][0], tuned,
                   counterparts(problem, tuned))


def render_mla_header(args: MlaArgs, provenance: Sequence[str] = ()) -> str:
    """``aoe_catlass_mla.h``; ``provenance`` lines go into its leading comment."""
    table = [f" *   {c.param:<11} tuned {c.tuned:<6} catlass runs {c.catlass:<11} "
             f"{'(same)' if c.matches else 'NO COUNTERPART'}  [{c.where}]"
             for c in args.counterparts]
    constants = [f"constexpr uint32_t kTuned{''.join(p.title() for p in n.split('_'))} = {v};"
                 for n, v in args.tuned.items()]
    return "\n".join([
        "/*",
        f" * {MLA_HEADER}: catlass's MLA decode kernel for a tuned MLA attention, rendered by",
        " * aoe_optuna (backends/npu/catlass/mla.py); regenerate it instead of editing it.",
        f" * Written against catlass@{CATLASS_COMMIT}; MLA<Dtype> (its using chain fixed",
        f" * inside) comes from {MLA_EXAMPLE}/mla_kernel.cpp (not include/catlass).",
        *(f" * {line}" for line in provenance),
        " *",
        " * The tuned tiling against what catlass's kernel runs: a parameter marked NO",
        " * COUNTERPART is not what this kernel runs; its value is kept as kTuned<Param>.",
        *table,
        " *",
        f" * Compile as Ascend C (bisheng, mix AIC+AIV) with -I<catlass>/include "
        f"-I<catlass>/{MLA_EXAMPLE}",
        f" * --npu-arch=dav-{args.arch.npu_arch} -DCATLASS_ARCH={args.arch.npu_arch}.",
        " */",
        "#pragma once",
        '#include "mla_kernel.cpp"  // MLA<Dtype> and the catlass headers it includes',
        "",
        f"#define AOE_INPUT_BF16 {int(args.dtype == 'bf16')}",
        f"#define AOE_MLA_LATENT {LATENT}",
        f"#define AOE_MLA_ROPE {ROPE}",
        "",
        "namespace aoe_catlass_mla {",
        "",
        f"using Element = {args.element};",
        f"constexpr uint32_t kPageTokens = {PAGE_TOKENS};  // mla_tiling.cpp: blockSize",
        *constants,
        "",
        "}  // namespace aoe_catlass_mla",
        "",
    ])


def mla_target() -> CatlassTarget:
    """The CMake target: the example's directory on the include path (mla_kernel.cpp,
    mla_tiling.cpp, kernel_common.hpp), cube and vector cores (``mix``, as the example)."""
    return CatlassTarget("aoe_catlass_mla", MLA_BENCH, MLA_TARGET_NAME, MLA_EXAMPLE, mix=True)


def render_mla_project(args: MlaArgs, profile: SocProfile, run_mode: str,
                       build_system: str = "asc",
                       provenance: Sequence[str] = ()) -> dict[str, str]:
    """File name -> text of the CMake project that builds, checks and times the kernel."""
    return {
        MLA_HEADER: render_mla_header(args, provenance),
        MLA_BENCH: TEMPLATES.text(MLA_BENCH),
        BENCH_COMMON_FILE: SHARED.text(BENCH_COMMON_FILE),
        HOST_NUMBERS_FILE: SHARED.text(HOST_NUMBERS_FILE),
        "CMakeLists.txt": render_cmake(None, run_mode, (), build_system, check_soc(profile),
                                       mla_target(), args.arch.npu_arch),
    }


def mla_problem_args(problem: MlaDecodeAttention) -> list[str]:
    """``batch context q_heads``: one query token per sequence; the timing arguments follow."""
    return [str(problem.batch), str(problem.context), str(problem.q_heads)]


def mla_program(problem: MlaDecodeAttention, config: Mapping[str, Any], dtype: str,
                profile: SocProfile, target: NpuTarget,
                provenance: Sequence[str] = ()) -> KernelProgram:
    """The build tree that times ``problem`` under ``config`` on the target and checks O;
    ProgramUnavailable (one line) where catlass's kernel cannot run it or be built there."""
    try:
        args = mla_args(problem, config, dtype, profile)
    except CatlassArgError as exc:
        raise ProgramUnavailable(f"MLA decode attention: {exc}") from None
    if target.run_mode not in CATLASS_RUN_MODES:
        raise ProgramUnavailable(f"run_mode={target.run_mode}: catlass kernels run in "
                                 f"{list(CATLASS_RUN_MODES)}")
    files = render_mla_project(args, profile, target.run_mode, target.catlass_build_system,
                               provenance)
    notes = [f"{c.param}={c.tuned}: no catlass counterpart (it runs {c.catlass})"
             for c in args.counterparts if not c.matches]
    return catlass_program(files, args, mla_target(), mla_problem_args(problem), target,
                           f"catlass MLA decode ({MLA_EXAMPLE})", notes)
