"""The cpu backend for real: gcc builds, driver processes, numpy checks, injected faults."""

from __future__ import annotations

import ctypes
import itertools
import os

import numpy as np
import pytest

from aoe_optuna.backends.cpu.backend import TEMP_PREFIX, CpuBackend, remove_orphaned_work_dirs
from aoe_optuna.backends.cpu.driver import quantize, round_to_dtype, to_layout
from aoe_optuna.backends.cpu.kernel import (
    BASE_FLAGS,
    SCHEDULE_FLAGS,
    compile_flags,
    render,
    validate_config,
)
from aoe_optuna.backends.kernel_build import toolchain_id
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import ParamError, default_config
from aoe_optuna.workload.gemm import Gemm

SMALL = Gemm(M=40, K=72, N=56, dtype="fp16")  # not multiples of the tiles: edges run too
FAST = {"min_repeats": 2, "max_repeats": 5, "max_seconds": 0.2}


def config(**changes) -> dict:
    c = default_config()
    c.update(tile_m=32, tile_n=32, tile_k=32, opt_level="O2", schedule="default")
    c.update(changes)
    return c


@pytest.fixture(scope="module")
def backend():
    with CpuBackend(timeout_s=60, **FAST) as b:
        yield b


def test_good_config_measures_ok_and_matches_numpy(backend: CpuBackend) -> None:
    m = backend.measure(config(pipeline=2, l1_prefetch=1, output_align=1), SMALL)
    assert m.ok, m.reason
    assert 0 < m.latency_s < 0.5
    assert m.cost_s >= m.latency_s and m.spread is not None
    assert m.extra["max_error"] <= m.extra["tolerance"]
    assert m.extra["accuracy_loss"] < 1e-5
    assert m.extra["gflops"] == pytest.approx(SMALL.flops / m.latency_s / 1e9)


def test_repeated_config_hits_the_build_cache(backend: CpuBackend) -> None:
    cfg = config(tile_m=16, unroll_factor=2)
    builds = backend.cache.builds
    first = backend.measure(cfg, SMALL)
    second = backend.measure(cfg, Gemm(M=24, K=8, N=40, dtype="fp32"))
    assert first.ok and second.ok
    assert not first.extra["build_cached"] and second.extra["build_cached"]
    assert backend.cache.builds == builds + 1
    assert list((backend.work_dir / "work").iterdir()) == []


def _run_in_process(lib_path, cfg: dict, gemm: Gemm) -> tuple[np.ndarray, np.ndarray]:
    """Call the built kernel from this process and return (C, numpy's expected C)."""
    rng = np.random.default_rng(1)
    A = round_to_dtype(rng.standard_normal((gemm.M, gemm.K), dtype=np.float32), gemm.dtype)
    B = round_to_dtype(rng.standard_normal((gemm.K, gemm.N), dtype=np.float32), gemm.dtype)
    scale = 1.0
    if cfg["quantization"]:
        (A, sa), (B, sb) = quantize(A), quantize(B)
        scale = sa * sb
        expected = (A.astype(np.int64) @ B.astype(np.int64)) * scale
    else:
        expected = A.astype(np.float64) @ B.astype(np.float64)
    ka = to_layout(A, cfg["layout"], cfg["tile_m"], cfg["tile_k"])
    kb = to_layout(B, cfg["layout"], cfg["tile_k"], cfg["tile_n"])
    c = np.full((gemm.M, gemm.N), np.nan, dtype=np.float32)
    fn = ctypes.CDLL(str(lib_path)).aoe_gemm
    fn.restype = None
    fn.argtypes = [ctypes.c_long] * 3 + [ctypes.c_void_p] * 3 + [ctypes.c_long, ctypes.c_float]
    fn(gemm.M, gemm.N, gemm.K, ka.ctypes.data, kb.ctypes.data, c.ctypes.data, gemm.N, scale)
    return c, expected


@pytest.mark.parametrize(("pipeline", "layout"),
                         list(itertools.product([0, 1, 2], ["row_major", "col_major", "z_major"])))
def test_every_structure_computes_the_product(backend, pipeline: int, layout: str) -> None:
    """Checked here, outside the driver, so the driver's own check is not the only judge."""
    for quantized in (False, True):
        cfg = config(pipeline=pipeline, layout=layout, quantization=quantized, tile_n=16,
                     l1_prefetch=pipeline % 2, unroll_factor=4, output_align=0)
        kernel = render(cfg)
        build = backend.cache.get_or_build(
            {"kernel.c": kernel.source}, [["cc", *kernel.flags, "-o", "k.so", "kernel.c"]],
            "k.so", toolchain_id("cc"), 60)
        assert build.ok
        c, expected = _run_in_process(build.artifact, cfg, SMALL)
        np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-3 * np.abs(expected).max())


def test_quantized_config_reports_its_accuracy_loss(backend: CpuBackend) -> None:
    m = backend.measure(config(quantization=True), Gemm(M=64, K=128, N=64, dtype="fp16"))
    assert m.ok, m.reason
    assert 1e-3 < m.extra["accuracy_loss"] < 0.05  # int8 per-tensor: about 1%
    assert m.extra["compute_dtype"] == "int8/int32"
    strict = CpuBackend(max_accuracy_loss=1e-4, work_dir=backend.work_dir, **FAST)
    refused = strict.measure(config(quantization=True), Gemm(M=64, K=128, N=64, dtype="fp16"))
    assert refused.failure_kind == "accuracy" and "accuracy loss" in refused.reason


@pytest.mark.parametrize(
    ("fault", "kind", "words"),
    [
        ("build", "build", "#error"),
        ("segfault", "runtime", "SIGSEGV"),
        pytest.param("hang", "timeout", "limit", marks=pytest.mark.slow),  # waits 3 s
        ("wrong", "accuracy", "wrong result"),
    ],
)
def test_each_failure_kind_for_real_and_the_caller_lives_on(tmp_path, fault, kind, words) -> None:
    faulty = CpuBackend(fault=fault, timeout_s=3, work_dir=tmp_path, **FAST)
    m = faulty.measure(config(), SMALL)
    assert not m.ok and m.failure_kind == kind, m
    assert words in m.reason and m.cost_s > 0
    healthy = CpuBackend(timeout_s=60, work_dir=tmp_path, **FAST)
    assert healthy.measure(config(), SMALL).ok
    assert list((tmp_path / "work").iterdir()) == []


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("layout", 'row_major"\n#include "/etc/passwd'),
        ("schedule", "default; -fplugin=evil.so"),
        ("opt_level", "O3 -fplugin=x"),
        ("tile_m", "64); system(\"id\"); (0"),
        ("tile_m", 24),  # not a multiple of 16
        ("tile_k", 4096),
        ("tile_n", True),
        ("unroll_factor", -1),
        ("pipeline", 3),
        ("quantization", "maybe"),
    ],
)
def test_rendering_refuses_values_outside_the_choices(name, value) -> None:
    with pytest.raises(ParamError, match=name):
        render(config(**{name: value}))


def test_refused_config_is_unsupported_without_a_build(tmp_path) -> None:
    b = CpuBackend(work_dir=tmp_path, **FAST)
    m = b.measure(config(layout="row_major\n#error x"), SMALL)
    assert m.failure_kind == "unsupported" and "layout" in m.reason
    missing = config()
    del missing["schedule"]
    assert "schedule" in b.measure(missing, SMALL).reason
    assert "bogus" in b.measure({**config(), "bogus": 1}, SMALL).reason
    assert b.cache.builds == 0


def test_rendered_source_and_flags_carry_the_config() -> None:
    k = render(config(tile_m=64, tile_n=128, tile_k=16, layout="z_major", pipeline=1,
                      opt_level=3, schedule="throughput", unroll_factor=8, quantization=1))
    for line in ("#define TILE_M 64", "#define TILE_N 128", "#define TILE_K 16",
                 "#define LAYOUT 2", "#define PIPELINE 1", "#define UNROLL 8",
                 "#define QUANTIZED 1"):
        assert line in k.source
    assert "$" not in k.source
    assert k.flags[-3:] == ("-O3", "-march=native", "-funroll-loops")
    for schedule, flags in SCHEDULE_FLAGS.items():
        rendered = compile_flags(validate_config(config(schedule=schedule)))
        assert rendered[len(BASE_FLAGS) + 1:] == flags
        assert "-ffast-math" not in flags


def test_from_options_checks_every_key(tmp_path) -> None:
    profile = load_profile("Ascend910B2")
    b = CpuBackend.from_options({"threads": 1, "timeout_s": 5, "work_dir": str(tmp_path)},
                                profile)
    assert b.name == "cpu" and b.timeout_s == 5 and b.work_dir == tmp_path
    with pytest.raises(ValueError, match="^colour: expected one of"):
        CpuBackend.from_options({"colour": "red"}, profile)
    with pytest.raises(ValueError, match="^threads: expected 1"):
        CpuBackend.from_options({"threads": 2}, profile)
    with pytest.raises(ValueError, match="^timeout_s: expected a positive"):
        CpuBackend.from_options({"timeout_s": "20"}, profile)
    with pytest.raises(ValueError, match="^fault: expected one of"):
        CpuBackend.from_options({"fault": "build"}, profile)
    with pytest.raises(ValueError, match=r"^clock: expected one of \['thread_cpu', 'wall'\]"):
        CpuBackend.from_options({"clock": "tsc"}, profile)
    with pytest.raises(ValueError, match=r"^estimator: expected one of \['median', 'min'\]"):
        CpuBackend.from_options({"estimator": "mean"}, profile)


def test_the_thread_cpu_clock_times_the_kernel_and_says_so_in_the_stamp(tmp_path) -> None:
    with CpuBackend(timeout_s=60, clock="thread_cpu", work_dir=tmp_path, **FAST) as b:
        m = b.measure(config(pipeline=2), SMALL)
        assert m.ok, m.reason
        assert 0 < m.latency_s < 0.5 and len(m.samples_s) >= 2
        assert b.environment()["clock"] == "thread_cpu"
    with CpuBackend(work_dir=tmp_path, **FAST) as wall:
        assert "clock" not in wall.environment()  # wall clock stamps stay as they were


def test_the_latency_is_the_fastest_call_by_default_and_the_stamp_says_which(tmp_path) -> None:
    with CpuBackend(work_dir=tmp_path, **FAST) as low, \
            CpuBackend(work_dir=tmp_path, estimator="median", **FAST) as middle:
        m, med = low.measure(config(pipeline=2), SMALL), middle.measure(config(pipeline=2), SMALL)
        assert m.ok and med.ok, (m.reason, med.reason)
        assert m.latency_s == min(m.samples_s)
        assert med.latency_s == float(np.median(med.samples_s))
        assert low.environment()["estimator"] == "min"
        assert "estimator" not in middle.environment()  # the median's stamps stay as they were


def test_close_removes_the_temporary_work_dir() -> None:
    b = CpuBackend(**FAST)
    root = b.work_dir
    assert b.measure(config(), Gemm(M=16, K=16, N=16, dtype="fp32")).ok
    assert root.exists()
    b.close()
    assert not root.exists()


def test_work_dirs_of_killed_processes_are_removed(tmp_path) -> None:
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    orphan = tmp_path / f"{TEMP_PREFIX}{dead.stdout.strip()}-abc"
    (orphan / "work").mkdir(parents=True)
    mine = tmp_path / f"{TEMP_PREFIX}{os.getpid()}-def"
    mine.mkdir()
    assert remove_orphaned_work_dirs(str(tmp_path)) == 1
    assert not orphan.exists() and mine.exists()


def test_catlass_knobs_are_infeasible_on_the_c_template() -> None:
    from aoe_optuna.spec.loader import spec_from_dict

    spec = spec_from_dict({"search_space": {"tile_m": [16, 32], "split_k": [1, 2],
                                            "layout_b": ["row_major", "zN"]},
                           "backend": {"name": "cpu"},
                           "workload": {"gemm": {"M": 64, "K": 64, "N": 64}}})
    assert spec.space.n_feasible == 2  # split_k 1 and a row-major B only
    why = spec.space.explain({"tile_m": 16, "split_k": 2, "layout_b": "row_major"})
    assert len(why) == 1 and why[0].startswith("cpu_no_catlass_knobs:") and "split_k=2" in why[0]
