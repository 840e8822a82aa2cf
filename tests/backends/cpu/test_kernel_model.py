"""The cpu kernel's model: the orders it claims, each from the template's structure."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.backends.cpu.host_cpu import HostCpu
from aoe_optuna.backends.cpu.kernel_model import CpuKernelModel
from aoe_optuna.space.params import default_config, to_code
from aoe_optuna.workload.gemm import Gemm

ICE_LAKE = HostCpu(avx=True, fma=True, avx512vl=True, sse41=True)
SSE_ONLY = HostCpu()
SQUARE = Gemm(M=512, K=512, N=512, dtype="fp16")
FAST = dict(tile_m=16, tile_n=32, tile_k=256, pipeline=2, opt_level="O2",
            schedule="throughput", layout="z_major", quantization=False)


def seconds(*changes: dict, host: HostCpu = ICE_LAKE, gemm: Gemm = SQUARE) -> np.ndarray:
    """The model's time of FAST with each of ``changes`` applied, one row each."""
    configs = [{**default_config(), **FAST, **c} for c in changes]
    columns = {name: np.array([to_code(name, c[name]) for c in configs])
               for name in FAST}
    return CpuKernelModel(host).latency(columns, gemm)


def test_the_native_fma_schedule_beats_baseline_sse_and_o0_is_slowest() -> None:
    native, sse, latency, o0, o1 = seconds({}, {"schedule": "default"},
                                           {"schedule": "latency"}, {"opt_level": "O0"},
                                           {"opt_level": "O1"})
    # 8 FMA lanes with the accumulators in registers; 4 lanes spilled (no -funroll-loops
    # under latency), or 4 lanes of mul + add (baseline SSE2)
    assert native < 0.5 * min(latency, sse)
    assert sse < o1 < o0  # vectorised, then scalar, then every operand through the stack


def test_accumulators_in_registers_only_where_they_fit_and_o3_does_not_keep_them() -> None:
    n32, n64, n32_o3 = seconds({}, {"tile_n": 64}, {"opt_level": "O3"})
    # 4 x 32 / 8 = 16 vectors fit 32 registers; 4 x 64 / 8 = 32 do not
    assert n32 < 0.8 * n64
    # -O3's loop interchange loads and stores a row of accumulators every step of K
    assert n32 < 0.8 * n32_o3
    # with 16 registers (no AVX-512VL) 16 + 2 vectors do not fit either
    no_vl = HostCpu(avx=True, fma=True, sse41=True)
    assert seconds({}, host=no_vl)[0] > 1.5 * n32


def test_a_short_k_block_adds_into_c_more_often() -> None:
    k16, k64, k256 = seconds({"tile_k": 16}, {"tile_k": 64}, {"tile_k": 256})
    assert k16 > k64 > k256


def test_column_major_packing_gathers_and_a_wide_block_packs_a_less_often() -> None:
    col32, col64, col128, row32 = seconds({"layout": "col_major"},
                                          {"layout": "col_major", "tile_n": 64},
                                          {"layout": "col_major", "tile_n": 128},
                                          {"layout": "row_major"})
    assert col32 > row32
    # the gather is paid once per column of blocks: twice as wide packs A half as often
    # (both with their accumulators spilled)
    assert col128 < col64


def test_o2_vectorises_only_the_packed_kernel_whose_trip_count_is_a_constant() -> None:
    packed, unpacked_o2, unpacked_o3 = seconds({}, {"pipeline": 0},
                                               {"pipeline": 0, "opt_level": "O3"})
    assert packed < unpacked_o3 < unpacked_o2


def test_the_packed_kernel_pays_for_whole_row_groups_and_tiles() -> None:
    one_row = Gemm(M=1, K=512, N=512, dtype="fp16")
    four_rows = Gemm(M=4, K=512, N=512, dtype="fp16")
    assert seconds({}, gemm=one_row)[0] == pytest.approx(seconds({}, gemm=four_rows)[0],
                                                         rel=0.05)
    unpacked = {"pipeline": 0, "opt_level": "O3"}
    assert seconds(unpacked, gemm=one_row)[0] < 0.5 * seconds(unpacked, gemm=four_rows)[0]


def test_int8_products_are_slower_than_fp32_fma_and_slower_still_without_sse41() -> None:
    fp32, int8 = seconds({}, {"quantization": True})
    assert int8 > fp32
    assert seconds({"quantization": True}, host=SSE_ONLY)[0] > int8


def test_a_space_without_a_parameter_takes_its_default() -> None:
    model = CpuKernelModel(ICE_LAKE)
    full = {**default_config(), **FAST, "pipeline": 2}
    columns = {name: np.array([to_code(name, full[name])]) for name in FAST}
    narrow = {k: v for k, v in columns.items() if k != "pipeline"}  # default 2: packed
    assert to_code("pipeline", default_config()["pipeline"]) != 0  # so 0 would be wrong
    assert model.latency(narrow, SQUARE)[0] == model.latency(columns, SQUARE)[0]
    unpacked = {**columns, "pipeline": np.array([0])}
    assert model.latency(unpacked, SQUARE)[0] != model.latency(columns, SQUARE)[0]


def test_the_spaces_own_columns_give_the_models_order() -> None:
    """Through ``SearchSpace.columns``, as the prior calls it: the fastest of a sample is
    a native-FMA, packed, -O2 kernel, and -O0 is never near the top."""
    from aoe_optuna.spec.loader import load_spec

    spec = load_spec("studies/cpu_gemm.json")
    rows = spec.space.sample_feasible(2000, np.random.default_rng(0))
    t = CpuKernelModel(ICE_LAKE).latency(spec.space.columns(rows), spec.workload.gemms[0])
    best = spec.space.config(rows[int(np.argmin(t))])
    assert (best["schedule"], best["opt_level"], best["quantization"]) == (
        "throughput", "O2", False)
    assert best["pipeline"] in (1, 2) and best["tile_n"] <= 32
    slowest = [spec.space.config(r)["opt_level"] for r in rows[np.argsort(t)[-20:]]]
    assert set(slowest) == {"O0"}


def test_the_host_figures_read_from_cpuinfo(tmp_path, monkeypatch) -> None:
    from aoe_optuna.backends.cpu import host_cpu

    (tmp_path / "cpuinfo").write_text("processor : 0\nflags\t\t: fpu sse2 avx avx2 fma\n")
    monkeypatch.setattr(host_cpu, "CPUINFO", tmp_path / "cpuinfo")
    host = HostCpu.this_host()
    assert host == HostCpu(avx=True, fma=True)
    assert host.native_lanes == 8 and host.native_registers == 16
    assert host.describe() == "AVX+FMA, 16 vector registers"
    monkeypatch.setattr(host_cpu, "CPUINFO", tmp_path / "absent")
    assert HostCpu.this_host() == HostCpu()  # baseline x86-64: SSE2, 16 registers
    assert HostCpu().native_lanes == 4
