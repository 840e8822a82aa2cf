"""The catlass kernel of the npu backend: template arguments, refusals, header and build line.

No CANN and no catlass here: what is checked is the text a compiler would see and the
command lines it would run; the static_assert twins are checked with their amounts.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest

from aoe_optuna.backends.base import FAILURE_LOG
from aoe_optuna.backends.kernel_build import BuildCache
from aoe_optuna.backends.npu.backend import NpuBackend, parse_options
from aoe_optuna.backends.npu.cann import CannToolkit
from aoe_optuna.backends.npu.catlass.args import (
    CatlassArgError,
    catlass_args,
    operand_layouts,
    shape_reason,
)
from aoe_optuna.backends.npu.catlass.build import (
    BENCH_FILE,
    BENCH_HEADER,
    NOT_FOUND,
    CatlassNotFound,
    catlass_build_commands,
    catlass_revision,
    compile_option_reason,
    find_catlass,
    render_catlass_project,
)
from aoe_optuna.backends.npu.catlass.render import HEADER_FILE, render_header
from aoe_optuna.backends.npu.simple_gemm.kernel import kernel_values
from aoe_optuna.backends.npu.simple_gemm.render import render_project, unsupported_reason
from aoe_optuna.backends.npu.sources import BENCH_COMMON_FILE
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config
from aoe_optuna.workload.gemm import Gemm

PROFILE = load_profile("Ascend910B3")


def header(dtype: str = "fp16", **changes: object) -> str:
    return render_header(catlass_args({**default_config(), **changes}, PROFILE, dtype))


def using(text: str, name: str) -> str:
    m = re.search(rf"^using {name} = (.+);", text, flags=re.MULTILINE)
    assert m, f"no using {name} in\n{text}"
    return m.group(1)


def fake_catlass(tmp_path: Path) -> Path:
    home = tmp_path / "catlass"
    (home / "include" / "catlass").mkdir(parents=True)
    (home / "include" / "catlass" / "catlass.hpp").write_text("#pragma once\n")
    return home


def fake_toolkit(tmp_path: Path) -> Path:
    home = tmp_path / "ascend-toolkit" / "latest"
    (home / "compiler" / "tikcpp" / "ascendc_kernel_cmake").mkdir(parents=True)
    return home


# ---- template arguments -------------------------------------------------------------------


def test_default_config_is_catlass_basic_matmul_example():
    """The defaults are examples/00_basic_matmul's instantiation but for its unit flag."""
    text = header()
    assert using(text, "ArchTag") == "Catlass::Arch::AtlasA2"
    assert using(text, "DispatchPolicy") == "Catlass::Gemm::MmadAtlasA2Pingpong<false>"
    assert using(text, "L1TileShape") == "Catlass::GemmShape<128, 256, 256>"
    assert using(text, "L0TileShape") == "Catlass::GemmShape<128, 256, 64>"
    assert using(text, "ElementA") == "half" and using(text, "ElementC") == "half"
    assert using(text, "LayoutA") == "Catlass::layout::RowMajor"
    assert using(text, "BlockMmad") == ("Catlass::Gemm::Block::BlockMmad<DispatchPolicy, "
                                        "L1TileShape, L0TileShape, AType, BType, CType>")
    assert using(text, "BlockScheduler") == "Catlass::Gemm::Block::GemmIdentityBlockSwizzle<3, 0>"
    assert using(text, "MatmulKernel") == ("Catlass::Gemm::Kernel::BasicMatmul<BlockMmad, "
                                           "BlockEpilogue, BlockScheduler>")
    assert using(text, "MatmulAdapter") == "Catlass::Gemm::Device::DeviceGemm<MatmulKernel>"
    assert '#include "catlass/gemm/kernel/basic_matmul.hpp"' in text
    assert "#define AOE_CATLASS_ARGS AOE_CATLASS_ARGS_PLAIN" in text
    # the using chain declares each name before it is used
    order = [m.group(1) for m in re.finditer(r"^using (\w+) =", text, flags=re.MULTILINE)]
    for i, name in enumerate(order):
        later = "\n".join(f"using {n} = {using(text, n)};" for n in order[:i])
        assert name not in later


def test_tile_shapes_swizzle_and_l1_k():
    text = header(tile_m=64, tile_n=128, tile_k=32, l1_k=128, swizzle_offset=5,
                  swizzle_direction=1)
    assert using(text, "L1TileShape") == "Catlass::GemmShape<64, 128, 128>"
    assert using(text, "L0TileShape") == "Catlass::GemmShape<64, 128, 32>"
    assert using(text, "BlockScheduler") == "Catlass::Gemm::Block::GemmIdentityBlockSwizzle<5, 1>"
    # l1_k = 0: tile_k x the profile's l1_k_steps
    text = header(tile_k=32, l1_k=0)
    assert using(text, "L1TileShape") == f"Catlass::GemmShape<128, 256, {32 * PROFILE.l1_k_steps}>"


def test_preload_and_unit_flag_pick_the_preload_kernel():
    text = header(preload=1, unit_flag=1)
    assert using(text, "DispatchPolicy") == "Catlass::Gemm::MmadAtlasA2Preload<true, true>"
    assert using(text, "MatmulKernel").startswith("Catlass::Gemm::Kernel::BasicMatmulPreload<")
    assert '#include "catlass/gemm/kernel/basic_matmul_preload.hpp"' in text
    assert using(header(unit_flag=1), "DispatchPolicy") == \
        "Catlass::Gemm::MmadAtlasA2Pingpong<true>"


def test_split_k_runs_the_tuned_split_count():
    text = header("bf16", split_k=4)
    assert "constexpr uint32_t kSplitK = 4;" in text
    assert using(text, "ElementC") == "float" and using(text, "ElementOut") == "bfloat16_t"
    assert using(text, "BlockScheduler") == \
        "Catlass::Gemm::Block::SplitkGemmIdentityBlockSwizzle<3, 0>"
    assert using(text, "ReduceAdd") == ("Catlass::Gemm::Kernel::SplitkReduceAdd<ArchTag, float, "
                                        "ElementOut, 1, 196608 / sizeof(float)>")
    assert using(text, "MatmulKernel") == "FixedSplitkMatmul<CatlassSplitkMatmul, kSplitK>"
    assert "struct FixedSplitkMatmul : public Base" in text
    assert "#define AOE_CATLASS_ARGS AOE_CATLASS_ARGS_SPLITK" in text


def test_padding_and_quant_variants():
    text = header(padding=1, layout_b="col_major")
    assert using(text, "MatmulKernel").startswith("Catlass::Gemm::Kernel::PaddingMatmul<")
    assert using(text, "LayoutB") == "Catlass::layout::ColumnMajor"
    assert "#define AOE_CATLASS_ARGS AOE_CATLASS_ARGS_PADDING" in text
    text = header(quantization=True, tile_k=128, l1_k=512)
    assert using(text, "ElementA") == "int8_t" and using(text, "ElementC") == "int32_t"
    assert using(text, "DispatchPolicy") == \
        "Catlass::Gemm::MmadAtlasA2PreloadAsyncWithCallback<1, 2, 2, 2, 1, false, true>"
    assert using(text, "MatmulKernel") == ("Catlass::Gemm::Kernel::QuantMatmulMultiStageWorkspace"
                                           "<BlockMmad, BlockEpilogue, BlockScheduler, 2>")
    assert using(text, "EpilogueDispatchPolicy") == \
        "Catlass::Epilogue::EpilogueAtlasA2PerTokenDequant<2>"
    assert '#include "catlass/epilogue/block/block_epilogue.hpp"' in text
    assert "#define AOE_CATLASS_ARGS AOE_CATLASS_ARGS_QUANT" in text


@pytest.mark.parametrize("layout,layout_a,layout_b,expected", [
    ("row_major", "row_major", "row_major", ("row_major", "row_major")),
    ("z_major", "row_major", "row_major", ("zN", "zN")),
    ("col_major", "row_major", "zN", ("col_major", "zN")),
    ("row_major", "col_major", "zN", ("col_major", "zN")),
])
def test_operand_layouts_and_the_legacy_layout(layout, layout_a, layout_b, expected):
    config = {**default_config(), "layout": layout, "layout_a": layout_a, "layout_b": layout_b}
    assert operand_layouts(config) == expected
    names = {"row_major": "RowMajor", "col_major": "ColumnMajor", "zN": "zN"}
    text = render_header(catlass_args(config, PROFILE, "fp16"))
    assert using(text, "LayoutA") == f"Catlass::layout::{names[expected[0]]}"
    assert using(text, "LayoutB") == f"Catlass::layout::{names[expected[1]]}"


REFUSED = [
    ({"pipeline": 1}, "fp16", "pipeline=1, l1_prefetch=1: catlass's dispatch policies"),
    ({"l1_prefetch": 0}, "fp16", "pipeline=2, l1_prefetch=0"),
    ({"l1_k": 96}, "fp16", "l1_k=96: expected a multiple of tile_k=64"),
    ({"l1_k": 32}, "fp16", "l1_k=32: expected a multiple of tile_k=64"),
    ({"tile_m": 256, "tile_n": 256, "l1_k": 512}, "fp16",
     "L1: (tile_m + tile_n) x l1_k x 2 B x 2 stages = 1048576 B exceeds the 524288 B"),
    ({"tile_m": 256, "tile_k": 128, "tile_n": 64, "l1_k": 128}, "fp16",
     "L0A: tile_m x tile_k x 2 B x 2 = 131072 B exceeds the 65536 B"),
    ({"tile_m": 64, "tile_k": 128, "tile_n": 256, "l1_k": 128}, "fp16",
     "L0B: tile_k x tile_n x 2 B x 2 = 131072 B exceeds the 65536 B"),
    ({"tile_m": 256, "tile_n": 256, "tile_k": 32}, "fp16",
     "L0C: tile_m x tile_n x 4 B = 262144 B exceeds the 131072 B"),
    ({"tile_m": 24}, "fp16", "tile_m=24: catlass needs every tile edge 32 B aligned"),
    ({"tile_k": 16, "quantization": True}, "fp16", "tile_k=16: catlass needs every tile edge"),
    ({"quantization": True, "unit_flag": 1}, "fp16", "ENABLE_UNIT_FLAG false for int8"),
    ({"quantization": True}, "bf16", "writes fp16 (half) only"),
    ({"split_k": 2, "padding": 1}, "fp16", "split_k and padding: the catlass kernels"),
    ({"split_k": 2, "preload": 1}, "fp16", "preload=1 with split_k"),
    ({"padding": 1, "layout_b": "zN"}, "fp16", "padding=1 with a zN operand"),
    ({"swizzle_direction": 2}, "fp16", "swizzle_direction=2: expected 0 (Zn) or 1 (Nz)"),
    ({"swizzle_offset": 0}, "fp16", "swizzle_offset=0: expected 1 or more"),
    ({}, "fp32", "dtype fp32"),
]


@pytest.mark.parametrize("changes,dtype,message", REFUSED)
def test_what_catlass_would_not_compile_is_refused_in_one_line(changes, dtype, message):
    with pytest.raises(CatlassArgError) as err:
        catlass_args({**default_config(), **changes}, PROFILE, dtype)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_only_atlas_a2_socs():
    other = dataclasses.replace(PROFILE, soc="Ascend310P3")
    with pytest.raises(CatlassArgError, match="soc Ascend310P3: .*Atlas A2"):
        catlass_args(default_config(), other, "fp16")


def test_split_count_beyond_the_k_tiles_is_refused_per_shape():
    args = catlass_args({**default_config(), "split_k": 4}, PROFILE, "fp16")  # L1 K = 256
    assert shape_reason(args, 16, 4096, 4096) is None
    assert shape_reason(args, 16, 512, 4096) == (
        "split_k=4: K=512 has only 2 L1 K tiles of 256 (catlass caps its split factor at "
        "that count)")


# ---- build ----------------------------------------------------------------------------


def test_catlass_absent_is_one_clear_line(tmp_path):
    with pytest.raises(CatlassNotFound) as err:
        find_catlass(env={})
    assert str(err.value) == NOT_FOUND and "\n" not in NOT_FOUND and "CATLASS_HOME" in NOT_FOUND
    with pytest.raises(CatlassNotFound, match=r"\$CATLASS_HOME=.* has no include/catlass"):
        find_catlass(env={"CATLASS_HOME": str(tmp_path)})
    home = fake_catlass(tmp_path)
    assert find_catlass(env={"CATLASS_HOME": str(home)}) == home
    assert find_catlass(str(home), env={"CATLASS_HOME": "/elsewhere"}) == home
    assert catlass_revision(home) == "unknown"
    (home / ".git" / "refs" / "heads").mkdir(parents=True)
    (home / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (home / ".git" / "refs" / "heads" / "main").write_text("0dfcf9df\n")
    assert catlass_revision(home) == "0dfcf9df"


def test_build_command_line_and_project(tmp_path):
    config = {**default_config(), "opt_level": "O3", "schedule": "throughput"}
    args = catlass_args(config, PROFILE, "fp16")
    home = tmp_path / "catlass"
    commands = catlass_build_commands(home, args, "npu")
    assert commands[0] == ["cmake", "-S", ".", "-B", "build", f"-DCATLASS_HOME={home}",
                           "-DCATLASS_ARCH=2201", "-DRUN_MODE=npu", "-DCMAKE_BUILD_TYPE=Release"]
    assert commands[-1] == ["cmake", "--install", "build", "--prefix", "out"]
    files = render_catlass_project(args, config, PROFILE, "npu")
    assert set(files) == {HEADER_FILE, BENCH_HEADER, BENCH_FILE, BENCH_COMMON_FILE,
                          "CMakeLists.txt"}
    cmake = files["CMakeLists.txt"]
    assert not re.search(r"@[A-Z_]+@", cmake)
    assert "find_package(ASC REQUIRED HINTS" in cmake and "LANGUAGES ASC CXX" in cmake
    assert "--npu-arch=dav-${CATLASS_ARCH}" in cmake
    assert "add_compile_definitions(CATLASS_ARCH=${CATLASS_ARCH}" in cmake
    assert "${CATLASS_HOME}/include" in cmake
    assert '"SHELL:$<$<COMPILE_LANGUAGE:ASC>:-O3 -mllvm -misched=ilpmax>"' in cmake
    assert "if(EXISTS ${ASCEND_HOME_PATH}/lib64/libunified_dlog.so)" in cmake
    assert 'set(CATLASS_ARCH "2201"' in cmake
    bench = files[BENCH_HEADER]
    assert '#define AOE_SOC_VERSION "Ascend910B3"' in bench
    assert '#define AOE_LAYOUT_A "RowMajor"' in bench
    assert '#include "aoe_catlass_gemm.h"' in files[BENCH_FILE]
    for form in ("QUANT", "SPLITK", "PADDING"):
        assert f"#elif AOE_CATLASS_ARGS == AOE_CATLASS_ARGS_{form}" in files[BENCH_FILE] or \
            f"#if AOE_CATLASS_ARGS == AOE_CATLASS_ARGS_{form}" in files[BENCH_FILE]


def test_simple_kernel_options_without_a_catlass_meaning():
    assert compile_option_reason(default_config()) is None
    assert compile_option_reason({**default_config(), "unroll_factor": 4}) == (
        "unroll_factor=4: the catlass kernel has no such knob (it builds as unroll_factor=0)")
    assert "output_align=0" in compile_option_reason({**default_config(), "output_align": 0})


# ---- the backend ----------------------------------------------------------------------


def test_options_name_the_kernel(monkeypatch, tmp_path):
    assert parse_options({})["kernel"] == "auto"
    with pytest.raises(ValueError, match="^kernel: "):
        parse_options({"kernel": "cutlass"})
    with pytest.raises(ValueError, match="^catlass: "):
        parse_options({"catlass": 3})
    monkeypatch.delenv("CATLASS_HOME", raising=False)
    with pytest.raises(CatlassNotFound, match="^catlass not found"):
        NpuBackend.from_options({"kernel": "catlass"}, PROFILE)


def catlass_backend(tmp_path: Path, run_mode: str = "npu") -> NpuBackend:
    return NpuBackend(CannToolkit(fake_toolkit(tmp_path), "8.0.RC3"), PROFILE, run_mode=run_mode,
                      cache=BuildCache(tmp_path / "cache"), timeout_s=60, kernel="catlass",
                      catlass_home=fake_catlass(tmp_path))


def test_backend_refuses_before_building(tmp_path):
    backend = catlass_backend(tmp_path)
    m = backend.measure({**default_config(), "pipeline": 1}, Gemm(64, 64, 64))
    assert m.failure_kind == "unsupported" and "pipeline=1" in m.reason
    m = backend.measure({**default_config(), "unroll_factor": 2}, Gemm(64, 64, 64))
    assert m.failure_kind == "unsupported" and "unroll_factor=2" in m.reason
    m = backend.measure({**default_config(), "split_k": 8}, Gemm(64, 512, 64))
    assert m.failure_kind == "unsupported" and "split_k=8: K=512" in m.reason
    assert backend.cache.builds == 0
    cpu = catlass_backend(tmp_path / "cpu", run_mode="cpu")
    assert "run_mode=cpu" in cpu.measure(default_config(), Gemm(64, 64, 64)).reason


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_backend_builds_with_cmake_and_fails_cleanly_without_cann(tmp_path):
    """Real cmake, no ASC compiler: a build failure measurement, cached, no exception."""
    backend = catlass_backend(tmp_path)
    m = backend.measure(default_config(), Gemm(64, 64, 64))
    assert not m.ok and m.failure_kind == "build", m
    log = m.extra[FAILURE_LOG]  # cmake's whole output, for the failed trial's artifact
    assert log.startswith("$ cmake") and "exit status" in log, log[:300]
    again = backend.measure(default_config(), Gemm(128, 256, 64))  # one build per config
    assert again.failure_kind == "build" and backend.cache.builds == 1


# ---- the simple kernel next to it ------------------------------------------------------


def test_simple_kernel_names_the_catlass_knobs_it_lacks():
    assert unsupported_reason(default_config(), "fp16", 64) is None
    why = unsupported_reason({**default_config(), "split_k": 2}, "fp16", 64)
    assert why == ("split_k=2: the simple kernel has no such knob "
                   "(backend option kernel=catlass has)")
    assert "swizzle_offset=5" in unsupported_reason({**default_config(), "swizzle_offset": 5},
                                                    "fp16", 64)
    # l1_k is a simple-kernel knob too: MMADs per L1 block
    config = {**default_config(), "tile_k": 32, "l1_k": 64}
    assert kernel_values(config, PROFILE, "fp16")["L1_K_STEPS"] == "2"
    assert kernel_values(default_config(), PROFILE, "fp16")["L1_K_STEPS"] == \
        str(PROFILE.l1_k_steps)
    assert "constexpr uint32_t L1_K_STEPS = 2;" in \
        render_project(config, "fp16", PROFILE, "npu")["gemm_kernel.cpp"]
