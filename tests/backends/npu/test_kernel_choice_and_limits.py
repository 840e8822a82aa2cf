"""Which kernel a toolkit gets (catlass needs CANN >= 8.2.RC1, 8.5.0 on find_package(ASC)),
every kind of config rendered, and the shapes past the 16-bit strides."""

from __future__ import annotations

import itertools
import re

import pytest

from aoe_optuna.backends.kernel_build import BuildCache
from aoe_optuna.backends.npu.backend import NpuBackend, choose_kernel
from aoe_optuna.backends.npu.cann import CannToolkit, find_cann
from aoe_optuna.backends.npu.catlass.args import VARIANTS, catlass_args
from aoe_optuna.backends.npu.catlass.build import (
    BUILD_SYSTEMS,
    catlass_build_system,
    render_catlass_project,
)
from aoe_optuna.backends.npu.simple_gemm.kernel import TEMPLATES
from aoe_optuna.backends.npu.simple_gemm.limits import (
    MAX_DIM,
    STRIDE_LIMIT,
    copy_plan,
    shape_reason,
)
from aoe_optuna.backends.npu.simple_gemm.render import RUN_MODES, render_project
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config
from aoe_optuna.workload.gemm import Gemm
from tests.backends.npu.toolkit_trees import SOC, make_catlass, make_toolkit

PROFILE = load_profile(SOC)


def toolkit(tmp_path, version):
    return find_cann(make_toolkit(tmp_path / "cann", version))


@pytest.mark.parametrize(("version", "legacy", "expected"), [
    ("8.0.RC3", True, "simple"),   # older than catlass's minimum
    ("8.1.RC1", True, "simple"),
    ("8.2.RC1", True, "catlass"),  # catlass <= v1.5.0 builds on 8.2.RC1
    ("8.2.RC1", False, "simple"),  # find_package(ASC) needs 8.5.0
    ("8.5.0", False, "catlass"),
    ("8.5.0", True, "catlass"),
])
def test_auto_takes_catlass_where_the_toolkit_builds_it(tmp_path, version, legacy, expected):
    tk = toolkit(tmp_path, version)
    home = make_catlass(tmp_path / "catlass", legacy)
    kernel, chosen = choose_kernel("auto", str(home), tk, "npu")
    assert kernel == expected and (chosen == home) == (expected == "catlass")
    assert choose_kernel("auto", str(home), tk, "cpu") == ("simple", None)  # no CPU twin
    if expected == "simple":
        with pytest.raises(ValueError, match=r"^kernel: .*CANN >= 8\.(2\.RC1|5\.0)"):
            choose_kernel("catlass", str(home), tk, "npu")


def test_auto_without_a_checkout_is_the_simple_kernel(tmp_path, monkeypatch):
    monkeypatch.delenv("CATLASS_HOME", raising=False)
    tk = toolkit(tmp_path, "8.5.0")
    assert choose_kernel("auto", None, tk, "npu") == ("simple", None)
    with pytest.raises(ValueError, match="^catlass not found"):
        choose_kernel("auto", str(tmp_path / "nope"), tk, "npu")  # named but absent
    backend = NpuBackend.from_options({"cann": str(tk.home)}, PROFILE)
    assert backend.kernel == "simple" and backend.toolkit.version == "8.5.0"


SIMPLE_KINDS = list(itertools.product(("row_major", "z_major"), ("fp16", "bf16"), (0, 1, 2),
                                      (0, 1), RUN_MODES))


@pytest.mark.parametrize(("layout", "dtype", "pipeline", "prefetch", "mode"), SIMPLE_KINDS)
def test_every_kind_of_simple_config_renders(layout, dtype, pipeline, prefetch, mode):
    cfg = {**default_config(), "layout": layout, "pipeline": pipeline, "l1_prefetch": prefetch,
           "tile_m": 64, "tile_n": 128}
    files = render_project(cfg, dtype, PROFILE, mode)
    kernel = files["gemm_kernel.cpp"]
    assert re.search(rf"^constexpr uint32_t PIPELINE = {pipeline};", kernel, re.MULTILINE)
    assert re.search(rf"^constexpr uint32_t LAYOUT = {layout};", kernel, re.MULTILINE)
    assert f'#define AOE_RUN_MODE "{mode}"' in files["aoe_gemm_config.h"]
    assert not re.search(r"@[A-Z_]+@", files["CMakeLists.txt"])


@pytest.mark.parametrize(("variant", "system"), list(itertools.product(VARIANTS, BUILD_SYSTEMS)))
def test_every_catlass_variant_renders_for_both_build_systems(variant, system):
    changes = {"basic": {}, "preload": {"preload": 1}, "padding": {"padding": 1},
               "splitk": {"split_k": 2}, "quant": {"quantization": True}}[variant]
    cfg = {**default_config(), **changes}
    args = catlass_args(cfg, PROFILE, "fp16")
    assert args.variant == variant
    cmake = render_catlass_project(args, cfg, PROFILE, "sim", system)["CMakeLists.txt"]
    assert not re.search(r"@[A-Z_]+@", cmake)
    if system == "legacy":
        assert "LANGUAGES ASCEND CXX" in cmake and 'set(SOC_VERSION "Ascend910B3"' in cmake
        arch = "dav-c220" if variant in ("padding", "splitk", "quant") else "dav-c220-cube"
        assert f"--cce-aicore-arch={arch}>" in cmake
    else:
        assert "LANGUAGES ASC CXX" in cmake and "find_package(ASC REQUIRED HINTS" in cmake


def test_build_system_follows_the_checkout(tmp_path):
    assert catlass_build_system(make_catlass(tmp_path / "old", legacy=True)) == "legacy"
    assert catlass_build_system(make_catlass(tmp_path / "new", legacy=False)) == "asc"


# ---- shapes --------------------------------------------------------------------------------


def test_kernel_and_python_agree_on_the_stride_limit():
    kernel = TEMPLATES.text("gemm_kernel.cpp")
    assert f"constexpr uint32_t STRIDE_LIMIT = {STRIDE_LIMIT};" in kernel
    assert "static_cast<uint64_t>(tile.m0) * shape_.k" in kernel  # 64-bit GM offsets
    assert "(1 << 24)" in TEMPLATES.text("main.cpp") and MAX_DIM == 1 << 24


def test_strides_past_16_bits_go_row_by_row():
    row, z = {"layout": "row_major"}, {"layout": "z_major"}
    assert copy_plan(row, 4096, 4096, 4096) == {"a": "one", "b": "one"}
    assert copy_plan(row, 64, 65536, 4096) == {"a": "per_row", "b": "one"}
    assert copy_plan(row, 64, 4096, 65536) == {"a": "one", "b": "per_row"}
    assert copy_plan(row, 64, 65520, 65520) == {"a": "one", "b": "one"}
    assert copy_plan(z, 65536, 64, 64) == {"a": "per_block", "b": "one"}
    assert copy_plan(z, 65521, 64, 64) == {"a": "per_block", "b": "one"}  # mPad 65536
    assert copy_plan(z, 64, 65536, 64) == {"a": "one", "b": "per_block"}


def test_shapes_the_host_program_refuses_are_one_line():
    assert shape_reason(1, 16, 1) is None and shape_reason(MAX_DIM, 16, MAX_DIM) is None
    assert shape_reason(MAX_DIM + 1, 16, 1) == (
        "M=16777217: the simple kernel takes dimensions 1 .. 16777216 (2^24)")
    assert "K=24" in shape_reason(64, 24, 64)


def test_a_large_shape_measures_with_its_copy_plan_named(tmp_path):
    """No toolkit build here: a measurement fails in the build, and still names its plan."""
    home = tmp_path / "broken"
    (home / "compiler" / "tikcpp" / "ascendc_kernel_cmake").mkdir(parents=True)
    backend = NpuBackend(CannToolkit(home, "8.1.RC1"), PROFILE, kernel="simple",
                         cache=BuildCache(tmp_path / "cache"), timeout_s=60)
    m = backend.measure(default_config(), Gemm(64, 70000, 64))
    assert m.failure_kind == "build" and m.extra["copy_plan"] == {"a": "per_row", "b": "one"}
    small = backend.measure(default_config(), Gemm(64, 64, 64))
    assert "copy_plan" not in small.extra
