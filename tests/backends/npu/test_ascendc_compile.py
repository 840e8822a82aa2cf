"""The rendered Ascend C kernel and the host program's CPU path compile against the
Ascend C headers (the asc-devkit and asc-tools checkouts ``ASCENDC_DEVKIT`` and
``ASCENDC_TOOLS`` name, declarations of the intrinsics in ascendc_decls/), in CPU-debug
mode for Atlas A2, with g++ (``ascendc_check.py``). Without both it skips, saying so.

Each compile goes to an object file (``-c``, no link): that costs a fifth more than
``-fsyntax-only`` and lets the test read which intrinsics the kernel references, none
of which may be one that stub_fun.h leaves untyped. Misuses of the API must fail.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from aoe_optuna.backends.npu.simple_gemm.render import cpu_kernel_options, render_project
from aoe_optuna.backends.npu.sources import BENCH_COMMON_FILE
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config
from tests.backends.npu.ascendc_check import (
    CompileResult,
    compile_all,
    grouped_kernels,
    skip_unless_compilable,
)

PROFILE = load_profile("Ascend910B3")
DATA = Path(__file__).resolve().parent / "data" / "ascendc"

skip_unless_compilable()


def config(**changes: object) -> dict[str, object]:
    return {**default_config(), **changes}


def kernel(cfg: dict[str, object], dtype: str = "fp16") -> str:
    return render_project(cfg, dtype, PROFILE, "cpu")["gemm_kernel.cpp"]


def write_group(tmp_path: Path, name: str, kernels: dict[str, str]) -> Path:
    path = tmp_path / f"{name}.cpp"
    path.write_text(grouped_kernels(kernels))
    return path


def write_host(tmp_path: Path, name: str, cfg: dict[str, object], dtype: str) -> Path:
    """main.cpp with its rendered aoe_gemm_config.h and aoe_bench_common.h, in a
    directory of its own."""
    files = render_project(cfg, dtype, PROFILE, "cpu")
    where = tmp_path / name
    where.mkdir()
    for file in ("main.cpp", "aoe_gemm_config.h", BENCH_COMMON_FILE):
        (where / file).write_text(files[file])
    return where / "main.cpp"


def assert_compiled(results: dict[str, CompileResult]) -> None:
    for name, result in results.items():
        assert result.ok, f"{name} does not compile:\n{result.output[-6000:]}"
        assert not result.untyped, (f"{name} references intrinsics stub_fun.h leaves untyped "
                                    f"(declare them with their documented types): "
                                    f"{result.untyped}")


def errors_of(output: str, variant: str) -> str:
    """The compiler's errors that arise in one variant of a group: each error with the
    context lines before it ("In instantiation of ... required from <variant>")."""
    chunks, chunk = [], []
    for line in output.splitlines():
        chunk.append(line)
        if "error:" in line:
            chunks.append("\n".join(chunk))
            chunk = []
    return "\n".join(c for c in chunks if variant in c)


# A misuse of the Ascend C API, as an edit of the rendered kernel, and the error it must
# raise. The first is caught by stub_fun.h's typed mad (Mmad forwards any tensors).
MISUSES = {
    "mmad_accumulator_as_a": ("AscendC::Mmad(acc, a2, b2, mp);", "AscendC::Mmad(a2, acc, b2, mp);",
                              r"no matching function for call to .mad\(half\*&, float\*&"),
    "load_into_fp32": ("AscendC::LoadData(a2[i * kFrac * FRACTAL_ELEMS],",
                       "AscendC::LoadData(a2[i * kFrac * FRACTAL_ELEMS].ReinterpretCast<float>(),",
                       r"no matching function for call to .LoadData\(AscendC::LocalTensor<float>"),
    "fixpipe_without_params": ("AscendC::Fixpipe(cGm_[static_cast<uint64_t>(tile.m0) * "
                               "shape_.ldc + tile.n0], acc, p);",
                               "AscendC::Fixpipe(cGm_[0], acc);",
                               r"no matching function for call to .Fixpipe"),
}
INTRINSIC_MISUSES = (  # line of misuse_intrinsics.cpp -> what is wrong there
    r"copy_gm_to_cbuf_multi_nd2nz_b16\(float\*",
    r"load_cbuf_to_ca\(half\*&, float\*&",
    r"mad\(float\*&, half\*&, half\*&, int, int, int\)",
    r"cannot convert .event_t. to .pipe_t.",
)


def test_default_kernel_compiles_and_misuses_fail(tmp_path, trees):
    """The quick tier: the default config, and every misuse failing with its error."""
    base = kernel(config())
    misused = {}
    for name, (old, new, _) in MISUSES.items():
        assert base.count(old) == 1, f"misuse {name}: the kernel no longer has {old!r}"
        misused[name] = base.replace(old, new)
    misused["intrinsics"] = (DATA / "misuse_intrinsics.cpp").read_text()
    results = compile_all({"default": (write_group(tmp_path, "default", {"default": base}), ()),
                           "misuse": (write_group(tmp_path, "misuse", misused), ())}, trees)
    assert_compiled({"default": results["default"]})
    bad = results["misuse"]
    assert not bad.ok, "the misuses compiled: the check does not check"
    for name, (_, _, expected) in MISUSES.items():
        assert re.search(expected, errors_of(bad.output, f"[{name}]")), (
            f"misuse {name} did not fail with {expected!r}:\n{bad.output[-4000:]}")
    intrinsic_errors = errors_of(bad.output, "[intrinsics]")
    for expected in INTRINSIC_MISUSES:
        assert re.search(expected, intrinsic_errors), (
            f"misuse_intrinsics.cpp: no error {expected!r}:\n{intrinsic_errors}")


# Every kind of simple-kernel config: each layout x dtype x pipeline x prefetch, the
# other knobs rotated through their kinds (unroll pragma, C row padding, tile shapes
# from the smallest to ones that fill L0A/L0B/L0C, an explicit l1_k). The copies past
# the 16-bit strides are run-time branches of every variant.
KNOB_ROTATION = (
    {},
    {"unroll_factor": 4, "output_align": 0},
    {"tile_m": 16, "tile_k": 16, "tile_n": 16, "l1_k": 64},
    {"tile_m": 128, "tile_k": 128, "tile_n": 128, "unroll_factor": 2},
    {"tile_m": 256, "tile_k": 32, "tile_n": 64, "output_align": 0},
    {"tile_m": 64, "tile_k": 64, "tile_n": 256, "l1_k": 256},
)


def simple_variants() -> dict[str, tuple[dict[str, object], str]]:
    out = {}
    kinds = itertools.product(("row_major", "z_major"), ("fp16", "bf16"), (0, 1, 2), (0, 1))
    for i, (layout, dtype, pipeline, prefetch) in enumerate(kinds):
        cfg = config(layout=layout, pipeline=pipeline, l1_prefetch=prefetch,
                     **KNOB_ROTATION[i % len(KNOB_ROTATION)])
        out[f"{layout}_{dtype}_p{pipeline}_l1p{prefetch}"] = (cfg, dtype)
    return out


@pytest.mark.slow  # about 40 s of one core, in two parallel compiles
def test_every_kind_of_config_compiles_with_each_optimisation_level(tmp_path, trees):
    variants = {name: kernel(cfg, dtype) for name, (cfg, dtype) in simple_variants().items()}
    names = sorted(variants)
    halves = {"group_a": names[::2], "group_b": names[1::2]}
    # The CPU twin's build flags of opt_level (schedule flags are bisheng's, never g++'s).
    flags = {"group_a": cpu_kernel_options(config(opt_level="O0")),
             "group_b": cpu_kernel_options(config(opt_level="O2", schedule="throughput"))}
    jobs = {group: (write_group(tmp_path, group, {n: variants[n] for n in members}),
                    flags[group]) for group, members in halves.items()}
    assert_compiled(compile_all(jobs, trees))


@pytest.mark.slow
def test_host_program_cpu_path_compiles_for_each_layout_and_dtype(tmp_path, trees):
    jobs = {}
    for layout, dtype, align in (("row_major", "fp16", 1), ("row_major", "bf16", 0),
                                 ("z_major", "fp16", 0), ("z_major", "bf16", 1)):
        name = f"main_{layout}_{dtype}"
        cfg = config(layout=layout, output_align=align, opt_level="O3")
        jobs[name] = (write_host(tmp_path, name, cfg, dtype), ("-Wall", "-Werror"))
    assert_compiled(compile_all(jobs, trees))


# Configs the backend renders but the kernel refuses at compile time, with the reason.
REFUSED = {
    "int8": (config(quantization=True), "fp16", r"QUANTIZATION: the int8 path is not implemented"),
    "col_major": (config(layout="col_major"), "fp16", r"LAYOUT: this kernel implements"),
    "l0b_overflow": (config(tile_k=64, tile_n=512), "fp16", r"L0B buffer overflow"),
    "l1_overflow": (config(tile_m=256, tile_n=256, tile_k=64, l1_k=512), "bf16",
                    r"L1 buffer overflow"),
}


@pytest.mark.slow
def test_configs_the_kernel_refuses_fail_with_their_static_assert(tmp_path, trees):
    group = {name: kernel(cfg, dtype) for name, (cfg, dtype, _) in REFUSED.items()}
    result = compile_all({"refused": (write_group(tmp_path, "refused", group), ())},
                         trees)["refused"]
    assert not result.ok
    for name, (_, _, expected) in REFUSED.items():
        assert re.search(expected, errors_of(result.output, f"[{name}]")), (
            f"{name}: no static_assert {expected!r}:\n{result.output[-4000:]}")
