"""CANN 8.0, 8.1 and 8.5 install layouts: discovery, versions, and the generated CMake
configured for real against each (toolkit_trees.py builds the trees)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aoe_optuna.backends.npu import toolkit_layout as layout
from aoe_optuna.backends.npu.cann import at_least, find_cann, version_key
from aoe_optuna.backends.npu.catlass.args import catlass_args
from aoe_optuna.backends.npu.catlass.build import render_catlass_project
from aoe_optuna.backends.npu.simple_gemm.render import render_project
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config
from tests.backends.npu.toolkit_trees import SOC, make_catlass, make_toolkit

PROFILE = load_profile(SOC)
VERSIONS = ("8.0.RC3", "8.1.RC1", "8.5.0")
# The log library each release ships (8.1.RC1 dropped unified_dlog), and where the kernel
# CMake support lies.
LOG_LIBRARY = {"8.0.RC3": "unified_dlog", "8.1.RC1": "ascendalog", "8.5.0": "ascendalog"}
KERNEL_CMAKE = {"8.0.RC3": "compiler/tikcpp", "8.1.RC1": "compiler/tikcpp",
                "8.5.0": f"{layout.host_arch()}-linux/tikcpp"}


@pytest.mark.parametrize("version", VERSIONS)
def test_each_layout_is_found_with_its_version(tmp_path, version):
    home = make_toolkit(tmp_path, version)
    tk = find_cann(env={"ASCEND_HOME_PATH": str(home)})
    assert tk.home == home and tk.version == version
    assert tk.ascendc_cmake_dir.relative_to(home).as_posix() == (
        KERNEL_CMAKE[version] + "/ascendc_kernel_cmake")
    assert layout.set_env_script(home) is not None
    assert layout.LOG_LIBRARY.find(home).name == f"lib{LOG_LIBRARY[version]}.so"
    # nothing in the environment: the default install places, in order
    found = find_cann(env={}, defaults=(str(tmp_path / "nowhere"), str(home)))
    assert found.home == home and found.found_by == f"default place {home}"


def test_versions_order_release_candidates_first():
    order = ["8.0.RC3", "8.0.0", "8.1.RC1", "8.2.RC1.alpha002", "8.2.RC1", "8.2.0", "8.5.0",
             "9.0.0"]
    keys = [version_key(v) for v in order]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert at_least("8.5.0", "8.2.RC1") and not at_least("8.1.RC1", "8.2.RC1")
    assert not at_least("unknown", "8.0.RC1") and version_key("V100R001") is None


def configure(tmp_path: Path, home: Path, mode: str) -> tuple[str, Path]:
    """Render the default candidate and run CMake's configure step on it; (log, build dir)."""
    src = tmp_path / f"project-{mode}"
    src.mkdir()
    for name, text in render_project({**default_config(), "schedule": "throughput"}, "fp16",
                                     PROFILE, mode).items():
        (src / name).write_text(text)
    done = subprocess.run(["cmake", "-S", str(src), "-B", str(src / "build"),
                           f"-DASCEND_CANN_PACKAGE_PATH={home}"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, src / "build"


needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")


@needs_cmake
@pytest.mark.parametrize("version", VERSIONS)
def test_generated_cmake_links_what_each_release_has(tmp_path, version):
    home = make_toolkit(tmp_path, version)
    log, build = configure(tmp_path, home, "npu")
    included = re.search(r"AOE-PROBE ascendc\.cmake (\S+)", log).group(1)
    assert included.endswith(KERNEL_CMAKE[version] + "/ascendc_kernel_cmake")
    link = (build / "CMakeFiles" / "gemm_bench.dir" / "link.txt").read_text()
    assert f"-l{LOG_LIBRARY[version]}" in link and "-lascendcl" in link
    missing = {"unified_dlog", "ascendalog"} - {LOG_LIBRARY[version]}
    assert not any(f"-l{lib}" in link for lib in missing)
    # the installed program keeps the toolkit's library directory next to $ORIGIN/../lib
    install = (build / "cmake_install.cmake").read_text()
    rpath = re.search(r'NEW_RPATH "([^"]*)"', install).group(1).replace("\\$", "$")
    assert rpath.split(":")[0] == "$ORIGIN/../lib" and f"{home}/lib64" in rpath


@needs_cmake
def test_generated_cmake_cpu_twin_takes_no_llvm_flags_and_no_acl(tmp_path):
    home = make_toolkit(tmp_path, "8.1.RC1")
    log, build = configure(tmp_path, home, "cpu")
    assert "AOE-PROBE tikicpulib" in log and "tools/tikicpulib/lib/cmake" in log
    flags = (build / "CMakeFiles" / "gemm_kernel_cpu.dir" / "flags.make").read_text()
    assert "-O2" in flags and "-mllvm" not in flags and "ASCENDC_CPU_DEBUG" in flags
    link = (build / "CMakeFiles" / "gemm_bench.dir" / "link.txt").read_text()
    assert "-lascendcl" not in link and "dlog" not in link


@needs_cmake
def test_catlass_project_finds_the_asc_package_of_8_5(tmp_path):
    """The ASC package is found where 8.5 puts it; the stand-in defines no ASC language, so
    configuring stops right after (a real toolkit's package goes on to the compiler)."""
    home = make_toolkit(tmp_path, "8.5.0")
    catlass = make_catlass(tmp_path / "catlass", legacy=False)
    cfg = default_config()
    args = catlass_args(cfg, PROFILE, "fp16")
    src = tmp_path / "catlass-project"
    src.mkdir()
    for name, text in render_catlass_project(args, cfg, PROFILE, "npu", "asc").items():
        (src / name).write_text(text)
    env = {**os.environ, "ASCEND_HOME_PATH": str(home)}
    done = subprocess.run(["cmake", "-S", str(src), "-B", str(src / "build"),
                           f"-DCATLASS_HOME={catlass}"], capture_output=True, text=True,
                          timeout=120, check=False, env=env)
    log = done.stdout + done.stderr
    found = re.search(r"AOE-PROBE ASC (\S+)", log)
    assert found and found.group(1).endswith("lib64/cmake/asc-config.cmake"), log


@needs_cmake
def test_legacy_catlass_project_hands_the_simulator_and_bisheng_to_its_modules(tmp_path):
    """catlass <= v1.5.0 on CANN 8.2.RC1: the checkout's ASCEND modules see the simulator's
    SoC (sim mode) and bisheng on PATH, as the backend's build environment sets it."""
    from aoe_optuna.backends.npu.cann import CannToolkit
    from aoe_optuna.backends.npu.commands import build_env

    home = make_toolkit(tmp_path, "8.2.RC1")
    catlass = make_catlass(tmp_path / "catlass", legacy=True)
    cfg = default_config()
    src = tmp_path / "legacy-project"
    src.mkdir()
    files = render_catlass_project(catlass_args(cfg, PROFILE, "fp16"), cfg, PROFILE, "sim",
                                   "legacy")
    for name, text in files.items():
        (src / name).write_text(text)
    env = build_env(CannToolkit(home, "8.2.RC1"), dict(os.environ))
    done = subprocess.run(["cmake", "-S", str(src), "-B", str(src / "build"),
                           f"-DCATLASS_HOME={catlass}"], capture_output=True, text=True,
                          timeout=120, check=False, env=env)
    log = " ".join((done.stdout + done.stderr).split())
    assert f"AOE-PROBE legacy simulator=ON model={SOC} bisheng={home}/" in log, log
    assert "ccec_compiler/bin/bisheng" in log
