"""The npu backend: rendering, command lines, output parsing, toolkit discovery.

Runs everywhere; the two tests that need the CANN toolkit (or its ACL headers)
are skipped with the reason where it is absent.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from aoe_optuna.backends.kernel_build import BuildCache
from aoe_optuna.backends.npu.backend import NpuBackend, parse_options
from aoe_optuna.backends.npu.cann import NOT_FOUND, CannNotFound, CannToolkit, find_cann
from aoe_optuna.backends.npu.commands import (
    TimingArgs,
    bench_command,
    build_commands,
    build_env,
    msprof_command,
    physical_device,
    run_env,
)
from aoe_optuna.backends.npu.results import (
    measurement_from_build_output,
    measurement_from_events,
    measurement_from_msprof,
    msprof_durations_us,
)
from aoe_optuna.backends.npu.simple_gemm.kernel import KERNEL_CONSTANTS, TEMPLATES
from aoe_optuna.backends.npu.simple_gemm.render import (
    render_project,
    unsupported_reason,
    validate_config,
)
from aoe_optuna.backends.npu.sources import BENCH_COMMON_FILE, RenderError, set_declaration
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config
from aoe_optuna.workload.gemm import Gemm
from tests.backends.npu.toolkit_trees import make_toolkit

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "npu"
PROFILE = load_profile("Ascend910B3")
CONFIG = {**default_config(), "tile_m": 64, "tile_k": 32, "tile_n": 128, "pipeline": 1,
          "l1_prefetch": 0, "output_align": 0, "unroll_factor": 4, "layout": "z_major",
          "opt_level": "O3", "schedule": "throughput"}


def declared(source: str, name: str) -> str:
    m = re.search(rf"^(?:constexpr\s+[\w:]+\s+{name}\s*=\s*([^;]+);|#define\s+{name}\s+(\S+)"
                  rf"|using\s+{name}\s*=\s*([\w:]+);)", source, flags=re.MULTILINE)
    assert m, f"{name} not declared"
    return next(g for g in m.groups() if g is not None).strip()


def fake_toolkit(tmp_path: Path, version: str = "8.0.RC3") -> Path:
    """A directory shaped like a broken toolkit: the kernel CMake directory without
    ascendc.cmake (discovery refuses it; a build through it fails in CMake)."""
    home = tmp_path / "ascend-toolkit" / "latest"
    (home / "compiler" / "tikcpp" / "ascendc_kernel_cmake").mkdir(parents=True)
    (home / "compiler" / "version.info").write_text(f"Version={version}\n")
    return home


# ---- rendering --------------------------------------------------------------------------


def test_kernel_declares_each_tunable_once_and_lists_them():
    text = TEMPLATES.text("gemm_kernel.cpp")
    for name in KERNEL_CONSTANTS.values():
        assert len(re.findall(rf"^(?:constexpr\s+\w+\s+{name}\s*=|#define\s+{name}\s)", text,
                              flags=re.MULTILINE)) == 1, name
        assert name in text.split("*/")[0], f"{name} missing from the header comment"
    assert 'extern "C" __global__ __aicore__ void gemm_kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c,' \
        in text
    assert "NEVER BUILT BY BISHENG HERE" in text  # g++ in CPU-debug mode only
    assert "tests/backends/npu/test_ascendc_compile.py" in text


def test_rendered_project_carries_the_config():
    files = render_project(CONFIG, "bf16", PROFILE, "sim")
    assert set(files) == {"gemm_kernel.cpp", "main.cpp", BENCH_COMMON_FILE, "aoe_gemm_config.h",
                          "CMakeLists.txt"}
    kernel = files["gemm_kernel.cpp"]
    expected = {"TILE_M": "64", "TILE_K": "32", "TILE_N": "128", "PIPELINE": "1",
                "L1_PREFETCH": "0", "OUTPUT_ALIGN": "0", "UNROLL_FACTOR": "4",
                "LAYOUT": "z_major", "QUANTIZATION": "false", "InputT": "bfloat16_t",
                "L1_K_STEPS": str(PROFILE.l1_k_steps)}
    assert {name: declared(kernel, name) for name in expected} == expected
    header = files["aoe_gemm_config.h"]
    for line in ('#define AOE_SOC_VERSION "Ascend910B3"', '#define AOE_RUN_MODE "sim"',
                 f"#define AOE_CUBE_CORES {PROFILE.cube_cores}u", "#define AOE_TILE_M 64u",
                 "#define AOE_TILE_N 128u", "#define AOE_OUTPUT_ALIGN 0",
                 "#define AOE_LAYOUT_Z 1", "#define AOE_INPUT_BF16 1"):
        assert line in header
    cmake = files["CMakeLists.txt"]
    assert 'set(RUN_MODE "sim"' in cmake and 'set(SOC_VERSION "Ascend910B3"' in cmake
    assert 'set(KERNEL_NAME "gemm_kernel")' in cmake
    assert "set(AOE_KERNEL_OPTIONS -O3 -mllvm -misched=ilpmax)" in cmake
    assert "set(AOE_CPU_KERNEL_OPTIONS -O3)" in cmake  # g++ rejects -mllvm
    assert "ascendc_library(${KERNEL_NAME}_${RUN_MODE} SHARED ${KERNEL_FILES})" in cmake
    assert "ascendc_kernel_cmake/ascendc.cmake" not in cmake or "include(" in cmake
    assert "@" not in cmake.replace("$<", "")  # every placeholder filled
    main = files["main.cpp"]
    for call in ("aclInit", "aclrtSetDevice(device)", "aclrtCreateStream", "aclrtMalloc",
                 "aclrtMemcpy", "aclrtRecordEvent", "aclrtEventElapsedTime",
                 "aoe_launch_gemm_kernel(blockDim, stream"):
        assert call in main
    # No launch through the generated stub: it allocates inside the timed window.
    assert "ACLRT_LAUNCH_KERNEL" not in main.split("*/", 1)[1]
    assert "gemm_kernel<<<blockDim, nullptr, stream>>>" in kernel


def test_rendering_refuses_values_outside_the_choices():
    with pytest.raises(RenderError, match="tile_m=100"):
        validate_config({**CONFIG, "tile_m": 100})
    with pytest.raises(RenderError, match="layout"):
        validate_config({**CONFIG, "layout": "row_major; system(\"rm -rf /\")"})
    with pytest.raises(RenderError, match="unroll_factor"):
        validate_config({**CONFIG, "unroll_factor": 1000})
    with pytest.raises(RenderError, match="space's choices"):
        validate_config(CONFIG, choices={"tile_m": [128, 256]})
    with pytest.raises(RenderError, match="lacks"):
        validate_config({"tile_m": 64})
    with pytest.raises(RenderError, match="run_mode"):
        render_project(CONFIG, "fp16", PROFILE, "gpu")
    with pytest.raises(RenderError, match="expected one declaration of TILE_Q"):
        set_declaration(TEMPLATES.text("gemm_kernel.cpp"), "TILE_Q", "1")


def test_a_declaration_is_set_in_each_form_and_only_where_it_is_declared():
    text = ("// TILE_M is the L1 tile's M\n"
            "constexpr uint32_t L1_TILE_M = 4;\n"
            "  static constexpr uint32_t TILE_M = 128;  // TILE_M rows\n"
            "#define PIPE 2\n"
            "using LayoutB = Catlass::layout::ColumnMajor;\n")
    out = set_declaration(text, "TILE_M", "64")
    assert "TILE_M = 64;  // TILE_M rows" in out and "L1_TILE_M = 4;" in out
    assert set_declaration(text, "PIPE", "1").endswith(
        "#define PIPE 1\nusing LayoutB = Catlass::layout::ColumnMajor;\n")
    assert "using LayoutB = Catlass::layout::zN;" in set_declaration(
        text, "LayoutB", "Catlass::layout::zN")
    with pytest.raises(RenderError, match="expected one declaration of PIPE, found 2"):
        set_declaration(text + "#define PIPE 3\n", "PIPE", "1")


def test_configs_the_kernel_does_not_implement_are_named():
    assert "int8" in unsupported_reason({**CONFIG, "quantization": True}, "fp16", 64)
    assert "col_major" in unsupported_reason({**CONFIG, "layout": "col_major"}, "fp16", 64)
    assert "fp32" in unsupported_reason(CONFIG, "fp32", 64)
    assert "K=72" in unsupported_reason(CONFIG, "fp16", 72)
    assert unsupported_reason(CONFIG, "fp16", 64) is None


# ---- command lines ------------------------------------------------------------------------


def test_command_lines_for_each_run_mode(tmp_path):
    tk = CannToolkit(make_toolkit(tmp_path, "8.0.RC3"), "8.0.RC3")
    for mode in ("npu", "sim", "cpu"):
        configure, build, install = build_commands(tk, "Ascend910B3", mode)
        assert configure[:5] == ["cmake", "-S", ".", "-B", "build"]
        assert f"-DRUN_MODE={mode}" in configure and "-DSOC_VERSION=Ascend910B3" in configure
        assert f"-DASCEND_CANN_PACKAGE_PATH={tk.home}" in configure
        assert build[:3] == ["cmake", "--build", "build"]
        assert install == ["cmake", "--install", "build", "--prefix", "out"]
    art = tmp_path / "out"
    timing = TimingArgs(warmup=2, launches=7)
    bench = bench_command(art, Gemm(256, 512, 128), timing, device=5)
    assert bench[:6] == [str(art / "bin" / "gemm_bench"), "256", "512", "128", "2", "7"]
    assert bench[-1] == "5" and len(bench) == 11
    npu = msprof_command(Path("/m/msprof"), bench, tmp_path, "npu", "Ascend910B3", timing)
    assert npu[:3] == ["/m/msprof", "op", f"--output={tmp_path}"]
    assert "--launch-skip-before-match=2" in npu and "--launch-count=7" in npu
    assert npu[-len(bench):] == bench  # the program last, with its arguments
    sim = msprof_command(Path("msprof"), bench, tmp_path, "sim", "Ascend910B3", timing)
    assert sim[1:4] == ["op", "simulator", "--soc-version=Ascend910B3"]
    with pytest.raises(ValueError):
        msprof_command(Path("msprof"), bench, tmp_path, "cpu", "Ascend910B3", timing)


def test_run_environments_name_the_libraries_of_each_mode(tmp_path):
    home = make_toolkit(tmp_path, "8.1.RC1")
    tk = CannToolkit(home, "8.1.RC1")
    art = tmp_path / "out"
    (art / "lib").mkdir(parents=True)
    sim_lib = home / "tools" / "simulator" / "Ascend910B3" / "lib"
    sim = run_env(tk, "Ascend910B3", "sim", art, {"LD_LIBRARY_PATH": "/x",
                                                   "ASCEND_RT_VISIBLE_DEVICES": "3"})
    assert sim["LD_LIBRARY_PATH"].split(":")[:3] == [str(sim_lib), str(art / "lib"),
                                                     str(home / "lib64")]
    assert sim["LD_LIBRARY_PATH"].endswith(":/x")
    assert sim["LD_PRELOAD"] == (f"{sim_lib / 'libruntime_camodel.so'}:"
                                 f"{sim_lib / 'libnpu_drv_camodel.so'}")
    assert "ASCEND_RT_VISIBLE_DEVICES" not in sim  # msprof does not support it
    under = run_env(tk, "Ascend910B3", "sim", art, {}, under_msprof=True)
    assert "LD_PRELOAD" not in under  # msprof op simulator loads the model itself
    twin = home / "tools" / "tikicpulib" / "lib"
    cpu = run_env(tk, "Ascend910B3", "cpu", art, {})["LD_LIBRARY_PATH"].split(":")
    assert cpu[:3] == [str(twin), str(twin / "Ascend910B3"), str(sim_lib)]
    npu = run_env(tk, "Ascend910B3", "npu", art, {})
    assert "simulator" not in npu["LD_LIBRARY_PATH"] and "LD_PRELOAD" not in npu
    assert build_env(tk, {"PATH": "/usr/bin"})["PATH"].split(":")[0] == str(
        home / "compiler" / "ccec_compiler" / "bin")


def test_the_device_is_an_argument_not_a_visible_list():
    assert physical_device(1, "npu", {}) == 1
    assert physical_device(0, "npu", {"ASCEND_RT_VISIBLE_DEVICES": "6,7"}) == 6
    assert physical_device(1, "npu", {"ASCEND_RT_VISIBLE_DEVICES": "6, 7"}) == 7
    assert physical_device(3, "sim", {"ASCEND_RT_VISIBLE_DEVICES": "6"}) == 0  # card 0 only
    with pytest.raises(ValueError, match="^device: expected an index below 1"):
        physical_device(1, "npu", {"ASCEND_RT_VISIBLE_DEVICES": "6"})


# ---- parsing recorded outputs --------------------------------------------------------------


def test_event_timing_output_is_a_latency():
    m = measurement_from_events((FIXTURES / "events_ok.txt").read_text(), cost_s=4.0)
    assert m.ok and m.latency_s == pytest.approx(2.2695e-05)
    assert 0 < m.spread < 0.01 and m.cost_s == 4.0
    assert m.extra["block_dim"] == 24 and m.extra["timing"] == "events"


def test_wrong_result_is_an_accuracy_failure():
    m = measurement_from_events((FIXTURES / "events_accuracy.txt").read_text(), cost_s=1.0)
    assert not m.ok and m.failure_kind == "accuracy"
    assert "1037 of 4112" in m.reason and "C[16, 0]" in m.reason


def test_acl_error_is_a_runtime_failure():
    m = measurement_from_events((FIXTURES / "events_runtime.txt").read_text(), cost_s=1.0)
    assert m.failure_kind == "runtime" and "aclrtMalloc" in m.reason and "207001" in m.reason
    silent = measurement_from_events("Segmentation fault\n", cost_s=1.0)
    assert silent.failure_kind == "runtime" and "no AOE_RESULT" in silent.reason


def test_msprof_csv_is_a_latency(tmp_path):
    assert msprof_durations_us(FIXTURES / "msprof") == [22.71, 22.64, 22.80]
    ok = (FIXTURES / "events_ok.txt").read_text()
    m = measurement_from_msprof(FIXTURES / "msprof", ok, cost_s=2.0)
    assert m.ok and m.latency_s == pytest.approx(22.71e-6) and m.extra["timing"] == "msprof"
    empty = measurement_from_msprof(tmp_path, ok, cost_s=2.0)
    assert empty.failure_kind == "runtime" and "OpBasicInfo.csv" in empty.reason
    bad = tmp_path / "OpBasicInfo.csv"
    bad.write_text("Op Name,Duration\ngemm,1.0\n")
    assert "Task Duration(us)" in measurement_from_msprof(tmp_path, ok, 1.0).reason


def test_compiler_errors_are_build_failures():
    m = measurement_from_build_output((FIXTURES / "build_l0a_overflow.txt").read_text(), 9.0)
    assert m.failure_kind == "build" and m.extra["overflow"] == "L0A"
    assert m.reason.splitlines()[0] == "build failed: L0A buffer overflow"
    assert "gemm_kernel.cpp:68:15: error: static assertion failed" in m.reason
    assert len(m.reason.splitlines()) <= 6
    link = measurement_from_build_output((FIXTURES / "build_link_error.txt").read_text(), 1.0)
    assert link.failure_kind == "build" and "undefined reference" in link.reason


def test_kernel_static_asserts_match_the_parser():
    text = TEMPLATES.text("gemm_kernel.cpp")
    for buffer in ("L0A", "L0B", "L0C", "L1"):
        assert f'"{buffer} buffer overflow:' in text


# ---- the toolkit, the options, the failure paths -----------------------------------------


def test_toolkit_absent_is_one_clear_line(tmp_path):
    with pytest.raises(CannNotFound) as err:
        find_cann(env={})
    assert str(err.value) == NOT_FOUND and "\n" not in NOT_FOUND
    assert "ASCEND_HOME_PATH" in NOT_FOUND and "backend.cann" in NOT_FOUND
    with pytest.raises(CannNotFound, match="not a directory"):
        find_cann(env={"ASCEND_HOME_PATH": str(tmp_path / "nope")})
    with pytest.raises(CannNotFound, match="ascendc_kernel_cmake"):
        find_cann(str(tmp_path))
    with pytest.raises(CannNotFound, match="CANN toolkit not found"):
        NpuBackend.from_options({"cann": str(tmp_path / "nope")}, PROFILE)


def test_toolkit_found_with_its_version(tmp_path):
    home = make_toolkit(tmp_path, "8.0.RC3")
    tk = find_cann(env={"ASCEND_TOOLKIT_HOME": str(home)})
    assert tk.home == home and tk.version == "8.0.RC3" and tk.found_by == "$ASCEND_TOOLKIT_HOME"
    assert find_cann(str(home), env={"ASCEND_HOME_PATH": "/elsewhere"}).home == home


def test_options_are_checked_by_name():
    assert parse_options({})["run_mode"] == "npu" and parse_options({})["kernel"] == "auto"
    for bad, key in (({"devices": 1}, "devices"), ({"run_mode": "gpu"}, "run_mode"),
                     ({"timing": "clock"}, "timing"), ({"warmup": -1}, "warmup"),
                     ({"iterations": 0}, "iterations"), ({"timeout_s": 0}, "timeout_s"),
                     ({"device": True}, "device"), ({"cann": 3}, "cann"),
                     ({"run_mode": "cpu", "timing": "msprof"}, "timing")):
        with pytest.raises(ValueError, match=rf"^{key}: "):
            parse_options(bad)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_measure_turns_a_broken_toolkit_into_a_build_failure(tmp_path):
    """Real cmake against a toolkit without ascendc.cmake: a FAIL measurement, no exception."""
    backend = NpuBackend(CannToolkit(fake_toolkit(tmp_path), "8.0.RC3"), PROFILE,
                         cache=BuildCache(tmp_path / "cache"), timeout_s=60)
    m = backend.measure(default_config(), Gemm(64, 64, 64))
    assert not m.ok and m.failure_kind == "build", m
    assert "ascendc.cmake" in m.reason or "CMake Error" in m.reason
    again = backend.measure(default_config(), Gemm(128, 64, 64))  # the failure is cached
    assert again.failure_kind == "build" and backend.cache.builds == 1
    unsupported = backend.measure({**default_config(), "layout": "col_major"}, Gemm(64, 64, 64))
    assert unsupported.failure_kind == "unsupported"
    assert backend.measure({**default_config(), "tile_m": 24}, Gemm(64, 64, 64)).failure_kind \
        == "infeasible"


# ---- where the toolkit is installed ------------------------------------------------------


def _toolkit_or_none() -> CannToolkit | None:
    try:
        return find_cann()
    except CannNotFound:
        return None


TOOLKIT = _toolkit_or_none()
NO_TOOLKIT = "no CANN toolkit: set ASCEND_HOME_PATH (source <install>/set_env.sh) to run this"


@pytest.mark.skipif(TOOLKIT is None or not (TOOLKIT.include_dir / "acl" / "acl.h").exists(),
                    reason=NO_TOOLKIT + " (needs the ACL headers, include/acl/acl.h)")
def test_host_program_compiles_against_the_acl_headers(tmp_path):
    import subprocess

    assert TOOLKIT is not None
    files = render_project(default_config(), "fp16", PROFILE, "npu")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-fsyntax-only",
                    f"-I{TOOLKIT.include_dir}", f"-I{tmp_path}", str(tmp_path / "main.cpp")],
                   check=True)


@pytest.mark.skipif(TOOLKIT is None, reason=NO_TOOLKIT)
def test_tunes_a_small_gemm_for_real(tmp_path):
    """Builds and runs three configs (npu mode; AOE_NPU_RUN_MODE=sim or cpu elsewhere)."""
    import os

    mode = os.environ.get("AOE_NPU_RUN_MODE", "npu")
    backend = NpuBackend.from_options({"run_mode": mode, "warmup": 1, "iterations": 2}, PROFILE)
    backend.cache = BuildCache(tmp_path / "cache")
    gemm = Gemm(256, 256, 256)
    results = [backend.measure({**default_config(), "tile_m": tm, "tile_n": tn}, gemm)
               for tm, tn in ((64, 64), (128, 128), (128, 256))]
    assert all(r.ok for r in results), [r.reason for r in results]
    best = min(results, key=lambda r: r.latency_s)
    assert best.latency_s > 0


def test_a_batched_gemm_is_refused_in_one_line_before_anything_is_built(tmp_path):
    """catlass's BatchedMatmul is another kernel; the backend says so instead of timing
    one matrix as if it were the batch."""
    backend = NpuBackend(CannToolkit(fake_toolkit(tmp_path), "8.0.RC3"), PROFILE,
                         cache=BuildCache(tmp_path / "cache"), timeout_s=60)
    m = backend.measure(default_config(), Gemm(1, 128, 512, batch=16))
    assert not m.ok and m.failure_kind == "unsupported"
    assert m.reason.startswith("batch=16: ") and "BatchedMatmul" in m.reason
    assert len(m.reason.splitlines()) == 1 and backend.cache.builds == 0
