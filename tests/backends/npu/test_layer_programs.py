"""Every layer kernel kind as the npu backend builds and times it: the program each kind
renders (build tree, commands, command line), what the chip cannot time said in one line,
and the backend's path from a program to a Measurement with real processes (the build
cache, the result line, the failure kinds). No CANN here: the program in the last tests is
a shell script that prints what a host program prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aoe_optuna.backends.kernel_build import BuildCache
from aoe_optuna.backends.npu.backend import NpuBackend
from aoe_optuna.backends.npu.cann import CannToolkit
from aoe_optuna.backends.npu.catlass.build import NOT_FOUND
from aoe_optuna.backends.npu.commands import TimingArgs
from aoe_optuna.backends.npu.kernel_program import (
    KernelProgram,
    NpuTarget,
    ProgramUnavailable,
    timing_arguments,
)
from aoe_optuna.backends.npu.layer_kernels.program import LAYER_BENCH_FILE
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.operators.npu_layer import untimed
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.moe_gating import MoeGating
from aoe_optuna.workload.vector_ops import VectorOp

PROFILE = load_profile("Ascend910B2")
CATLASS = Path("/src/catlass")
TOOLKIT = CannToolkit(Path("/usr/local/Ascend/cann"), "8.5.0", "test")

# one problem of each kind an operator run tunes, with the program that times it
OPS = {
    "decode_attention": (DecodeAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128,
                                         context=1024), "fai_bench",
                         ["1", "1", "1024", "28", "4"]),
    "prefill_attention": (PrefillAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128,
                                           seq_len=512), "fai_bench",
                          ["1", "512", "512", "28", "4"]),
    "mla_decode_attention": (MlaDecodeAttention(batch=1, q_heads=16, context=4096),
                             "mla_bench", ["1", "4096", "16"]),
    "rmsnorm": (VectorOp("rmsnorm", 1, 3584, "fp16"), "vector_bench", ["1"]),
    "add_rmsnorm": (VectorOp("add_rmsnorm", 4, 3584, "bf16"), "vector_bench", ["4"]),
    "swiglu": (VectorOp("swiglu", 1, 18944, "fp16"), "vector_bench", ["1"]),
    "rope": (VectorOp("rope", 1, 4096, "fp16", 128), "vector_bench", ["1"]),
    "moe_gating": (MoeGating(1, 64, 6, "fp16"), "gating_bench", ["1"]),
}


def _op(problem) -> LayerOperator:
    dtype = getattr(problem, "dtype", "fp16")
    return LayerOperator(problem, dtype if isinstance(dtype, str) else "fp16", ("x",), 1)


def _program(op: LayerOperator, target: NpuTarget) -> KernelProgram:
    return op.operator_kind.npu_program(op.problem, op.dtype, op.default_config(PROFILE),
                                        PROFILE, target)


@pytest.mark.parametrize("name", sorted(OPS))
def test_each_kind_renders_a_complete_build_tree(name: str) -> None:
    problem, exe, args = OPS[name]
    op = _op(problem)
    assert op.op_name == name
    program = _program(op, NpuTarget(TOOLKIT, "npu", CATLASS))
    cmake = program.files["CMakeLists.txt"]
    assert not re.search(r"@[A-Z_]+@", cmake), "an unfilled CMake placeholder"
    assert f"install(TARGETS {exe}" in cmake
    assert "aoe_bench_common.h" in program.files
    assert [c[:2] for c in program.build] == [["cmake", "-S"], ["cmake", "--build"],
                                             ["cmake", "--install"]]
    timing = TimingArgs(warmup=2, launches=7)
    assert program.argv(Path("/t/out"), timing, 3) == [
        f"/t/out/bin/{exe}", *args, *timing_arguments(timing, 3)]
    assert timing_arguments(timing, 3) == ["2", "7", "5", "50", "0.02", "2.0", "3"]
    if "attention" in name:  # built against the checkout, keyed by it
        assert f"-DCATLASS_HOME={CATLASS}" in program.build[0]
        assert program.toolchain.startswith(f"catlass|{CATLASS}|")
    else:  # our own kernel, through the GEMM's CMake project and commands
        assert f"-DASCEND_CANN_PACKAGE_PATH={TOOLKIT.home}" in program.build[0]


def test_the_vector_host_program_agrees_with_its_kernel() -> None:
    """The config header the host reads and the kernel's declarations are one render."""
    op = _op(VectorOp("add_rmsnorm", 4, 3584, "bf16"))
    config = {**op.default_config(PROFILE), "fused": 0}
    program = op.operator_kind.npu_program(op.problem, op.dtype, config, PROFILE,
                                           NpuTarget(TOOLKIT, "sim", None))
    kernel, header = program.files["vector_kernel.cpp"], program.files["aoe_vector_config.h"]
    for host, device in (("AOE_VECTOR_KIND", "KIND"), ("AOE_WIDTH", "WIDTH"),
                         ("AOE_CORES", "CORES")):
        want = re.search(rf"constexpr \w+ {device} = (\w+);", kernel)
        got = re.search(rf"#define {host} (\w+?)u?$", header, flags=re.MULTILINE)
        assert want and got and want.group(1) == got.group(1), host
    assert "constexpr bool FUSED = false;" in kernel and "#define AOE_FUSED 0" in header
    assert "#define AOE_INPUT_BF16 1" in header and "using InputT = bfloat16_t;" in kernel
    assert '#define AOE_RUN_MODE "sim"' in header
    assert "aoe_launch_vector_add(" in kernel and "aoe_launch_vector_add(" in \
        program.files["vector_bench.cpp"]


def test_what_the_chip_cannot_time_is_one_line() -> None:
    vector = _op(VectorOp("swiglu", 1, 18944, "fp16"))
    with pytest.raises(ProgramUnavailable, match=r"^run_mode=cpu: the .* uses ACL"):
        _program(vector, NpuTarget(TOOLKIT, "cpu", CATLASS))
    decode = _op(OPS["decode_attention"][0])
    with pytest.raises(ProgramUnavailable) as err:
        _program(decode, NpuTarget(TOOLKIT, "npu", None))
    assert str(err.value) == NOT_FOUND
    window = _op(PrefillAttention(batch=1, q_heads=16, kv_heads=8, head_dim=128,
                                  seq_len=8192, window=4096))
    mla128 = _op(MlaDecodeAttention(batch=1, q_heads=128, context=1024))
    ops = [vector, window, decode, mla128]
    lines = untimed(ops, PROFILE, NpuTarget(TOOLKIT, "npu", CATLASS))
    assert sorted(lines) == [1, 3]
    assert lines[1].startswith("attention prefill-b1-q16-kv8-d128-s8192-w4096: not timed on "
                               "the npu backend: prefill attention: sliding window 4096")
    assert "128 heads: catlass's example runs its Tp1Spec kernels" in lines[3]
    assert all("\n" not in line for line in lines.values())


# ------------------------------------------------ a program through the backend, for real
RESULT = ('AOE_RESULT {{"status": "{status}", "kernel": "vector", "block_dim": 8, '
          '"launches": 10, "warmup_batches": 2, "device": {{device}}, '
          '"samples_s": [2.0e-6, 2.2e-6, 2.1e-6], "output": "y", "checked": 3584, '
          '"bad": {bad}, "max_abs_err": 0.5{first}}}')


def _script_program(tmp_path: Path, status: str, builds: Path, fail_build: bool = False
                    ) -> KernelProgram:
    """A program whose build writes out/bin/bench (a script printing a result line, with
    the device it was given) and counts its builds in ``builds``."""
    bad = 0 if status == "ok" else 1
    first = "" if status == "ok" else \
        ', "first_bad": {"row": 0, "col": 5, "got": 1.0, "want": 2.0}'
    line = RESULT.format(status=status, bad=bad, first=first)
    script = ("#!/bin/sh\n" + 'device="$8"\n'
              + "printf '%s\\n' '" + line.replace("{device}", "'\"$device\"'") + "'\n"
              + ("exit 3\n" if status == "accuracy" else ""))
    build = ("echo built >> " + str(builds) + "\n"
             + ("echo 'vector_kernel.cpp:12:3: error: UB buffer overflow' >&2; exit 1\n"
                if fail_build else "")
             + "mkdir -p out/bin && cp bench.sh out/bin/bench && chmod +x out/bin/bench\n")
    return KernelProgram({"build.sh": build, "bench.sh": script}, [["sh", "build.sh"]],
                         "bin/bench", ["1"], f"test|{status}", "a test program")


def _backend(tmp_path: Path) -> NpuBackend:
    home = tmp_path / "cann"
    home.mkdir(exist_ok=True)
    return NpuBackend(CannToolkit(home, "8.5.0", "test"), PROFILE, device=0,
                      cache=BuildCache(tmp_path / "cache"))


def test_a_program_is_built_once_then_run_and_read_as_the_gemm_program(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "6,7")  # a worker's card: physical id 6
    builds = tmp_path / "builds.txt"
    backend = _backend(tmp_path)
    program = _script_program(tmp_path, "ok", builds)
    first, again = backend.measure_program(program), backend.measure_program(program)
    assert first.ok and again.ok, first.reason
    assert first.latency_s == pytest.approx(2.1e-6)  # the median of the samples
    assert first.extra["device"] == 6 and first.extra["samples"] == 3
    assert builds.read_text().count("built") == 1  # the second came from the build cache


def test_a_wrong_result_and_a_failed_build_keep_their_kinds(tmp_path) -> None:
    builds = tmp_path / "builds.txt"
    backend = _backend(tmp_path)
    wrong = backend.measure_program(_script_program(tmp_path, "accuracy", builds))
    assert not wrong.ok and wrong.failure_kind == "accuracy"
    assert "1 of 3584 checked entries of y out of tolerance" in wrong.reason
    assert "first at y[0, 5]: got 1, want 2" in wrong.reason
    broken = backend.measure_program(_script_program(tmp_path, "ok", builds, fail_build=True))
    assert not broken.ok and broken.failure_kind == "build"
    assert "UB buffer overflow" in broken.reason
    cpu = NpuBackend(backend.toolkit, PROFILE, run_mode="cpu", cache=backend.cache)
    refused = cpu.measure_program(_script_program(tmp_path, "ok", builds))
    assert refused.failure_kind == "unsupported" and "run_mode=cpu" in refused.reason


@pytest.mark.parametrize("name", sorted(OPS))
def test_each_host_program_takes_what_the_backend_passes_and_times_as_the_gemm(
        name: str) -> None:
    """The command line the backend builds and the argument count the C++ program checks
    are one contract (the layer kernels' programs parse theirs in aoe_layer_bench.h); the
    program times with aoe_bench_common.h's rules (timing.py's)."""
    problem, exe, args = OPS[name]
    program = _program(_op(problem), NpuTarget(TOOLKIT, "npu", CATLASS))
    source = next(text for file, text in program.files.items() if file.endswith("bench.cpp"))
    host = source + program.files.get(LAYER_BENCH_FILE, "")
    (count,) = re.findall(r"if \(argc != (\d+)\)", host)
    assert int(count) == 1 + len(args) + len(timing_arguments(TimingArgs(), 0)), exe
    assert "WarmUpAndTime(" in source and "AOE_RESULT" in host
    assert "TimeOnStream(" in program.files["aoe_bench_common.h"]
