"""The catlass instantiations against catlass and the Ascend C headers, with g++ in
CPU-debug mode (docs/NPU.md, "Compile check"). bisheng compiles a mix kernel once per
core type, with ``g_coreType`` a constant of that pass (asc-devkit
``impl/utils/sys_macros.h``); CPU-debug mode declares it a run-time variable, which
catlass cannot use in its ``if constexpr`` and template arguments. Each compile here is
one such pass: after the framework headers, ``g_coreType`` names a constant of ours
(AIC or AIV), so catlass's core-type branches resolve as bisheng's would.

What compiles that way: the MLA decode instantiation (``aoe_catlass_mla.h``, catlass's
``examples/19_mla/mla_kernel.cpp``), in both passes (with bisheng's ``__DAV_CUBE__`` or
``__DAV_VEC__``, which the example tests with ``#ifdef``), each object referencing its
unit's intrinsics. What g++ still refuses, pinned to its
first error so that docs/NPU.md stays exact: flash-attention-infer and the GEMM
instantiation declare ``operator()<AIC>``/``<AIV>`` as explicit specialisations inside
their class (``fai_kernel.cpp``, ``basic_matmul.hpp``), which GCC does not implement
(CWG 727; clang does). Needs ASCENDC_DEVKIT, ASCENDC_TOOLS and CATLASS_HOME naming
checkouts; slow (10 to 30 s a compile)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from aoe_optuna.backends.npu.catlass.args import catlass_args
from aoe_optuna.backends.npu.catlass.fai import fai_args, render_fai_header
from aoe_optuna.backends.npu.catlass.mla import MLA_EXAMPLE, mla_args, render_mla_header
from aoe_optuna.backends.npu.catlass.render import render_header
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.attention_space import config_of as decode_config_of
from aoe_optuna.space.decode_attention import DecodeAttention, cann_default_tiling
from aoe_optuna.space.mla_attention import MlaDecodeAttention, catlass_default_tiling
from aoe_optuna.space.mla_attention_space import config_of as mla_config_of
from aoe_optuna.space.params import default_config
from tests.backends.npu.ascendc_check import HeaderTrees, compile_object, skip_unless_compilable

skip_unless_compilable()
CATLASS = Path(os.environ.get("CATLASS_HOME", "")).expanduser()
if not (CATLASS / "include" / "catlass" / "catlass.hpp").is_file():
    pytest.skip("catlass compile check: set CATLASS_HOME to a catlass checkout "
                "(git clone https://github.com/hicann/catlass)", allow_module_level=True)
pytestmark = pytest.mark.slow
ACL_DECLS = Path(__file__).resolve().parent / "acl_decls"
PROFILE = load_profile("Ascend910B2")
FAI_EXAMPLE = "examples/23_flash_attention_infer"
# bisheng keywords the host compiler lacks; catlass's arch macro (its CMake defines it)
CATLASS_FLAGS = ("-D__forceinline__=inline", "-DCATLASS_ARCH=2201")
MLA_ENTRY = ("uint64_t, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, "
             "GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR")


def core_pass(core: str, header: str, body: str) -> str:
    """One of bisheng's per-core passes: ``g_coreType`` a constant of ours past the
    framework headers, then the rendered header and what instantiates it."""
    return "\n".join(['#include "kernel_operator.h"', "#define g_coreType aoe_core_type",
                      f"constexpr int32_t aoe_core_type = AscendC::{core};",
                      f'#include "{header}"', body, ""])


# bisheng's macro of each core pass, which catlass's examples test with #ifdef
PASS_MACROS = {"AIC": "-D__DAV_CUBE__", "AIV": "-D__DAV_VEC__"}
# what each pass's half of a kernel must reference once instantiated: the cube's MMAD
# (typed in ascendc_decls), the vector unit's exp (untyped: listed, not type-checked)
CORE_WORK = {"AIC": r"^mad\(", "AIV": r"aoe_untyped::vexp<"}


def undefined_symbols(obj: Path) -> list[str]:
    out = subprocess.run(["nm", "-u", "-C", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    return [line.split(" U ", 1)[-1].strip() for line in out.splitlines()]


def _compile(tmp_path: Path, trees: HeaderTrees, name: str, files: dict[str, str],
             example: str, core: str):
    for file, text in files.items():
        (tmp_path / file).write_text(text)
    flags = (*CATLASS_FLAGS, PASS_MACROS[core], f"-I{CATLASS / 'include'}",
             f"-I{CATLASS / example}", f"-I{ACL_DECLS}")
    return compile_object(tmp_path / name, trees, flags)


@pytest.mark.parametrize(("core", "dtype"), [("AIC", "fp16"), ("AIV", "bf16")])
def test_the_mla_instantiation_compiles_in_each_core_pass(
        tmp_path: Path, trees: HeaderTrees, core: str, dtype: str) -> None:
    problem = MlaDecodeAttention(batch=1, q_heads=16, context=4096)
    config = mla_config_of(catlass_default_tiling(PROFILE, problem))
    header = render_mla_header(mla_args(problem, config, dtype, PROFILE))
    body = f"template void MLA<aoe_catlass_mla::Element>({MLA_ENTRY});"
    result = _compile(tmp_path, trees, "mla.cpp", {
        "aoe_catlass_mla.h": header, "mla.cpp": core_pass(core, "aoe_catlass_mla.h", body)},
        MLA_EXAMPLE, core)
    assert result.ok, result.output[-6000:]
    # the pass's half of the kernel was instantiated: its unit's intrinsics are referenced
    symbols = undefined_symbols(tmp_path / "mla.o")
    assert any(re.search(CORE_WORK[core], symbol) for symbol in symbols), core


def _first_error(output: str) -> str:
    return next(line for line in output.splitlines() if ": error: " in line)


def test_fai_and_gemm_stop_at_gcc_s_in_class_explicit_specialisation(
        tmp_path: Path, trees: HeaderTrees) -> None:
    decode = DecodeAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, context=1024)
    fai = render_fai_header(fai_args(decode, decode_config_of(
        cann_default_tiling(PROFILE, decode)), "fp16", PROFILE))
    fai_out = _compile(tmp_path, trees, "fai.cpp", {
        "aoe_catlass_fai.h": fai, "fai.cpp": core_pass("AIC", "aoe_catlass_fai.h", "")},
        FAI_EXAMPLE, "AIC")
    assert not fai_out.ok
    assert re.search(r"fai_kernel\.cpp:\d+:\d+: error: explicit specialization in "
                     r"non-namespace scope", _first_error(fai_out.output))
    gemm = render_header(catlass_args({**default_config(), "pipeline": 2, "l1_prefetch": 1},
                                      PROFILE, "fp16"))
    body = ("void aoe_check(aoe_catlass::MatmulKernel::Params const &p) "
            "{ aoe_catlass::MatmulKernel k; k(p); }")
    gemm_out = _compile(tmp_path, trees, "gemm.cpp", {
        "aoe_catlass_gemm.h": gemm, "gemm.cpp": core_pass("AIC", "aoe_catlass_gemm.h", body)},
        "include", "AIC")
    assert not gemm_out.ok
    assert re.search(r"basic_matmul\.hpp:\d+:\d+: error: explicit specialization in "
                     r"non-namespace scope", _first_error(gemm_out.output))
