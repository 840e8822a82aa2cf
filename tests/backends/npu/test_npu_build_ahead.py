"""The npu backend builds ahead: its build (the simple kernel or catlass) runs in
``build_ahead`` on a builder, and ``measure`` then only times it on the device.

Against a toolkit tree laid out like CANN 8.5.0 (``toolkit_trees.py``) with a stand-in
``cmake`` first on PATH: it logs each step, takes a moment, and installs a host program
that logs when it runs and prints a recorded result line. So the build cache, the build
commands, the run environment and the result parser are the backend's own; only the
compiler and the chip are stand-ins."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import optuna
import pytest

from aoe_optuna.attrs import ATTR_BUILD_S
from aoe_optuna.backends.kernel_build import BuildCache
from aoe_optuna.backends.npu.backend import NpuBackend
from aoe_optuna.backends.npu.cann import CannToolkit
from aoe_optuna.cli.main import main
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config
from aoe_optuna.spec.loader import spec_from_dict
from aoe_optuna.study.run.build_pool import (
    ATTR_BUILD_CACHED,
    ATTR_BUILDERS,
    ATTR_TIME_S,
    ATTR_TIMED_AT,
)
from aoe_optuna.study.run.device_lease import LEASE_DIR_ENV
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.session import SamplerRequest, StudySession
from aoe_optuna.workload.gemm import Gemm
from tests.backends.npu.toolkit_trees import make_catlass, make_toolkit
from tests.study.run.cpu_study import measured

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "npu" / "events_ok.txt"
PROFILE = load_profile("Ascend910B2")
STEP_S = 0.15  # each stand-in build step and each timed run takes this long


@pytest.fixture
def stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``cmake`` and a host program that log what ran when; returns the log folder.
    A file ``fail`` in it makes the next configure step fail as CMake does."""
    logs = tmp_path / "logs"
    logs.mkdir()
    bench = tmp_path / "gemm_bench"
    bench.write_text("#!/bin/sh\n"
                     f'echo "$(date +%s.%N) start" >> {logs}/runs\n'
                     f"sleep {STEP_S}\ncat {FIXTURE}\n"
                     f'echo "$(date +%s.%N) end" >> {logs}/runs\n')
    bench.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cmake = bin_dir / "cmake"
    cmake.write_text("#!/bin/sh\n"
                     f'echo "$(date +%s.%N) $1" >> {logs}/builds\n'
                     f'echo "$*" >> {logs}/argv\n'
                     f"sleep {STEP_S}\n"
                     f'if [ "$1" = "-S" ] && [ -e {logs}/fail ]; then\n'
                     '  echo "CMake Error at CMakeLists.txt:1 (project): injected" >&2\n'
                     "  exit 1\nfi\n"
                     'if [ "$1" = "--install" ]; then\n'
                     f"  mkdir -p out/bin && cp {bench} out/bin/gemm_bench\nfi\n"
                     f'echo "$(date +%s.%N) $1 done" >> {logs}/builds\n')
    cmake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "leases"))
    return logs


def _backend(tmp_path: Path, kernel: str = "simple") -> NpuBackend:
    home = make_toolkit(tmp_path / "tk", "8.5.0", soc="Ascend910B2")
    catlass = make_catlass(tmp_path / "catlass", legacy=False) if kernel == "catlass" else None
    return NpuBackend(CannToolkit(home, "8.5.0"), PROFILE, cache=BuildCache(tmp_path / "cache"),
                      timeout_s=60, kernel=kernel, catlass_home=catlass)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("kernel", ["simple", "catlass"])
def test_build_ahead_builds_and_measure_only_times(
        tmp_path: Path, stand_ins: Path, kernel: str) -> None:
    backend = _backend(tmp_path, kernel)
    config, gemm = default_config(), Gemm(256, 256, 256)
    built = backend.build_ahead(config, gemm)
    assert built is not None and built.ok and not built.cached and built.seconds >= 3 * STEP_S
    steps = len(_lines(stand_ins / "builds"))
    assert steps == 6 and not _lines(stand_ins / "runs")  # configure, build, install
    m = backend.measure(config, gemm)
    assert m.ok and m.latency_s == pytest.approx(2.2695e-05), m
    assert len(_lines(stand_ins / "builds")) == steps and len(_lines(stand_ins / "runs")) == 2
    again = backend.build_ahead(config, Gemm(512, 256, 128))  # one build serves every shape
    assert again is not None and again.ok and again.cached and again.seconds == 0.0
    assert backend.cache.builds == 1
    if kernel == "catlass":  # the catlass project, built against the checkout
        assert any("-DCATLASS_HOME=" in line for line in _lines(stand_ins / "argv"))


def test_a_serial_measure_says_how_long_its_build_took(tmp_path: Path,
                                                      stand_ins: Path) -> None:
    backend = _backend(tmp_path)
    first = backend.measure(default_config(), Gemm(256, 256, 256))
    assert first.ok and first.extra["build_s"] >= 3 * STEP_S  # what a serial split reads
    assert not first.extra["build_cached"] and first.cost_s >= first.extra["build_s"] + STEP_S
    again = backend.measure(default_config(), Gemm(512, 256, 128))  # the build serves both
    assert again.ok and again.extra["build_s"] == 0.0 and again.extra["build_cached"]


def test_a_failed_build_ahead_is_the_measurements_build_failure(
        tmp_path: Path, stand_ins: Path) -> None:
    (stand_ins / "fail").touch()
    backend = _backend(tmp_path)
    built = backend.build_ahead(default_config(), Gemm(256, 256, 256))
    assert built is not None and not built.ok and built.seconds >= STEP_S
    m = backend.measure(default_config(), Gemm(256, 256, 256))
    assert not m.ok and m.failure_kind == "build" and "injected" in m.reason, m
    assert m.cost_s < STEP_S  # the failed build is charged once, by the build ahead
    assert backend.cache.builds == 1 and not _lines(stand_ins / "runs")


def test_a_refused_config_builds_nothing_ahead(tmp_path: Path, stand_ins: Path) -> None:
    backend = _backend(tmp_path)
    built = backend.build_ahead(default_config(), Gemm(1, 128, 512, batch=16))
    assert built is not None and not built.ok and built.seconds == 0.0
    assert backend.measure(default_config(), Gemm(1, 128, 512, batch=16)).failure_kind \
        == "unsupported"
    assert backend.cache.builds == 0 and not _lines(stand_ins / "builds")


def _stamps(path: Path, start: str, end: str) -> list[tuple[float, float]]:
    """(start, end) of each logged step, in order of start."""
    begun: list[float] = []
    spans = []
    for line in _lines(path):
        at, what = line.split(" ", 1)
        if what == start:
            begun.append(float(at))
        elif what == end:
            spans.append((begun.pop(0), float(at)))
    return sorted(spans)


@pytest.mark.slow  # about 6 s: eight stand-in builds and timings
def test_builders_compile_while_the_device_times_one_at_a_time(
        tmp_path: Path, stand_ins: Path) -> None:
    backend = _backend(tmp_path)
    spec = spec_from_dict({
        "op_name": "Gemm", "hardware": {"soc": "Ascend910B2"},
        "search_space": {"tile_m": [64, 128], "tile_n": [128, 256], "tile_k": [32, 64]},
        "workload": {"gemm": {"M": 256, "K": 256, "N": 256, "dtype": "fp16"}},
        "backend": {"name": "npu", "kernel": "simple",
                    "cann": str(backend.toolkit.home), "timeout_s": 60}})
    session = StudySession.open(f"sqlite:///{tmp_path / 'npu.db'}", spec,
                                sampler=SamplerRequest("random", seed=2), backend=backend)
    started = time.time()
    session.run(Budget(n_measurements=5), builders=1)
    trials = measured(session.study)
    assert len(trials) == 5 and all(t.value for t in trials), [t.user_attrs for t in trials]
    assert backend.cache.builds == len({json.dumps(t.params, sort_keys=True) for t in trials})
    for t in trials:  # each trial's build ran ahead, on a builder, before its timing
        assert t.user_attrs[ATTR_BUILD_S] >= 3 * STEP_S and not t.user_attrs[ATTR_BUILD_CACHED]
        assert started <= t.user_attrs[ATTR_TIMED_AT] and t.user_attrs[ATTR_TIME_S] >= STEP_S
    runs = _stamps(stand_ins / "runs", "start", "end")
    assert len(runs) == 5
    for (_, end), (start, _) in zip(runs, runs[1:], strict=False):
        assert start >= end  # the device's lease: one timing after another
    # a whole build, configure to install: its middle step alone is as short as a run,
    # so a run that began with the next build's configure step could miss it
    builds = _stamps(stand_ins / "builds", "-S", "--install done")
    assert any(b0 < r1 and r0 < b1 for b0, b1 in builds for r0, r1 in runs), \
        "no build ran while the device timed"


@pytest.mark.slow  # about 6 s: two aoe-tune runs of three stand-in builds and timings
def test_aoe_tune_on_the_npu_builds_ahead_by_default_and_not_with_builders_0(
        tmp_path: Path, stand_ins: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    home = make_toolkit(tmp_path / "tk", "8.5.0", soc="Ascend910B2")
    spec = tmp_path / "npu.json"
    spec.write_text(json.dumps({
        "op_name": "Gemm", "hardware": {"soc": "Ascend910B2"},
        "search_space": {"tile_m": [64, 128], "tile_n": [128, 256], "tile_k": [32, 64]},
        "workload": {"gemm": {"M": 256, "K": 256, "N": 256, "dtype": "fp16"}},
        "backend": {"name": "npu", "kernel": "simple", "cann": str(home), "timeout_s": 60}}))
    monkeypatch.setenv("AOE_BUILD_CACHE", str(tmp_path / "cache"))
    url = f"sqlite:///{tmp_path / 'npu.db'}"
    spare = len(os.sched_getaffinity(0)) - 1  # one core for the card's host program
    for name, extra in (("default", []), ("serial", ["--builders", "0"])):
        monkeypatch.setenv("AOE_BUILD_CACHE", str(tmp_path / f"cache-{name}"))  # builds
        assert main(["--config", str(spec), "--storage", url, "--study-name", name,
                     "--n-trials", "3", "--sampler", "random", "--seed", "0",
                     "--no-progress", *extra]) == 0
        err = capsys.readouterr().err
        trials = measured(optuna.load_study(study_name=name, storage=url))
        assert len(trials) == 3 and all(t.value for t in trials)
        pooled = {t.user_attrs.get(ATTR_BUILDERS) for t in trials}
        if name == "default" and spare >= 1:
            noun = "builder" if spare == 1 else "builders"
            said = f"{spare} {noun} (the npu default; --builders 0: none)"
            assert pooled == {spare} and said in err
        else:
            assert pooled == {None} and "builder" not in err, err
        # serial or pooled, each trial says how long its build took (none cached here)
        assert all(t.user_attrs[ATTR_BUILD_S] >= 3 * STEP_S for t in trials), name
