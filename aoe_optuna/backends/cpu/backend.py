"""The cpu backend: build the config's C GEMM with the system compiler and time it.

One ``measure`` = render (:mod:`.cpu_kernel`) -> build through the shared
content-hash cache (:mod:`.kernel_build`) -> run the driver
(:mod:`.cpu_driver`) in its own process under a time limit -> a Measurement.
A compiler error, a crash, a hang or a wrong result comes back as a failed
Measurement of kind build / runtime / timeout / accuracy with the first lines
of the message, and the caller goes on.

The GEMM's fp16/bf16 compute in fp32 on the CPU (no fast fp16 here); see
the driver for the numerics and the check. ``cost_s`` is the wall time the
measurement really took (render + build or cache hit + driver run).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aoe_optuna.backends.base import BackendBase, BuildAhead, Measurement
from aoe_optuna.backends.cpu.compiler import find_compiler
from aoe_optuna.backends.cpu.kernel import TILE_RANGE, CpuKernel, render
from aoe_optuna.backends.cpu.kernel_model import CpuKernelModel, kernel_model
from aoe_optuna.backends.kernel_build import (
    BuildCache,
    BuildResult,
    failure_from_run,
    first_lines,
    run_limited,
)
from aoe_optuna.backends.timing import CLOCKS, ESTIMATORS
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.process_liveness import pid_alive
from aoe_optuna.space.constraints import Rule, compile_expression
from aoe_optuna.space.params import KNOWN_PARAMS, ParamError
from aoe_optuna.workload.gemm import Gemm

# catlass's knobs at the values the C template stands for
CATLASS_AT_DEFAULT = {"l1_k": 0, "swizzle_offset": 3, "swizzle_direction": 0, "preload": 0,
                      "unit_flag": 0, "split_k": 1, "padding": 0, "layout_a": "row_major",
                      "layout_b": "row_major"}
LIBRARY = "libgemm.so"
SOURCE = "kernel.c"
FAULTS = ("build", "segfault", "hang", "wrong")  # test-only, see CpuBackend
TEMP_PREFIX = "aoe-cpu-"  # temporary work dirs: aoe-cpu-<pid>-<random>
SINGLE_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# option -> (type, default, check, what is expected)
_OPTIONS: dict[str, tuple[type | tuple[type, ...], Any, Any, str]] = {
    "threads": (int, 1, lambda v: v == 1,
                "1 (the kernel is single-threaded; run one worker per core instead)"),
    "timeout_s": ((int, float), 20.0, lambda v: v > 0, "a positive number of seconds"),
    "build_timeout_s": ((int, float), 60.0, lambda v: v > 0, "a positive number of seconds"),
    "work_dir": (str, None, lambda v: bool(v), "a directory path"),
    # None: $CC, else cc (backends/cpu/compiler.py)
    "compiler": (str, None, lambda v: bool(v) and v.strip() == v, "a compiler name or path"),
    "rel_precision": ((int, float), 0.02, lambda v: 0 < v < 1, "a number between 0 and 1"),
    "min_repeats": (int, 3, lambda v: v >= 1, "an integer >= 1"),
    "max_repeats": (int, 1000, lambda v: v >= 1, "an integer >= 1"),
    # the window a timing's minimum is taken over: on this project's shared VM 2 s reached
    # past the other tenants' spells, 0.5 s did not (decision 0044)
    "max_seconds": ((int, float), 2.0, lambda v: v > 0, "a positive number of seconds"),
    "seed": (int, 0, lambda v: v >= 0, "a non-negative integer"),
    "max_accuracy_loss": ((int, float), None, lambda v: v >= 0,
                          "a non-negative relative error, e.g. 0.01"),
    "early_stop_margin": ((int, float), 0.10, lambda v: 0 <= v < 10,
                          "a relative margin such as 0.1 (0: time every config in full)"),
    # wall: perf_counter; thread_cpu: the timing thread's CPU time, which a loaded host's
    # waits for a core do not count (backends/timing.py)
    "clock": (str, "wall", lambda v: v in CLOCKS, f"one of {sorted(CLOCKS)}"),
    # min: the fastest call of a max_seconds window, which reaches past a shared host's
    # bursts of interference; median: stop once the median is known (backends/timing.py)
    "estimator": (str, "min", lambda v: v in ESTIMATORS, f"one of {list(ESTIMATORS)}"),
}


class CpuBackend(BackendBase):
    """Builds each config's C GEMM, times it in a driver process, checks it against numpy.

    ``work_dir`` holds the build cache (``<work_dir>/<key>/libgemm.so``) and
    per-build work directories (removed after each build). Without one, a
    temporary directory is used and removed by :meth:`close` (or at exit); one
    left behind by a process that was killed is removed by the next backend.

    The Ascend AI core's buffer rules do not apply to a CPU kernel; its own
    (:meth:`device_rules`) are the limits of the C template: tiles are multiples
    of 16 up to 512.

    ``compiler``: the spec's, else ``$CC``, else ``cc`` (:mod:`.compiler`); one that
    is not there is refused here, before anything is built or measured.

    ``fault`` is a test-only switch (not accepted by :meth:`from_options`):
    ``build`` adds an ``#error`` line to the source, ``segfault`` / ``hang`` /
    ``wrong`` are passed to the driver (see :mod:`.cpu_driver`).
    """

    name = "cpu"
    runs_on_soc = False

    @classmethod
    def leased_device(cls) -> None:
        """A host core of its own (the build pool picks it), not a named device."""
        return None

    def __init__(
        self,
        *,
        threads: int = 1,
        timeout_s: float = 20.0,
        build_timeout_s: float = 60.0,
        work_dir: str | os.PathLike[str] | None = None,
        compiler: str | None = None,
        rel_precision: float = 0.02,
        min_repeats: int = 3,
        max_repeats: int = 1000,
        max_seconds: float = 2.0,
        seed: int = 0,
        max_accuracy_loss: float | None = None,
        early_stop_margin: float = 0.10,
        clock: str = "wall",
        estimator: str = "min",
        fault: str | None = None,
    ) -> None:
        for key, value in [("threads", threads), ("timeout_s", timeout_s),
                           ("build_timeout_s", build_timeout_s), ("compiler", compiler),
                           ("rel_precision", rel_precision), ("min_repeats", min_repeats),
                           ("max_repeats", max_repeats), ("max_seconds", max_seconds),
                           ("seed", seed), ("max_accuracy_loss", max_accuracy_loss),
                           ("early_stop_margin", early_stop_margin), ("clock", clock),
                           ("estimator", estimator)]:
            _check_option(key, value)
        if max_repeats < min_repeats:
            raise ValueError(f"max_repeats: expected at least min_repeats ({min_repeats}), "
                             f"got {max_repeats}")
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"fault: expected one of {FAULTS}, got {fault!r}")
        self.compiler = find_compiler(compiler)  # before any folder is made: it may refuse
        self.timeout_s = float(timeout_s)
        self.build_timeout_s = float(build_timeout_s)
        self.timing_args = [
            "--min-repeats", str(min_repeats), "--max-repeats", str(max_repeats),
            "--rel-precision", repr(float(rel_precision)), "--max-seconds",
            repr(float(max_seconds)), "--seed", str(seed), "--clock", clock,
            "--estimator", estimator,
        ]
        self.clock = clock
        self.estimator = estimator
        self.max_accuracy_loss = max_accuracy_loss
        # A timing stops once clearly slower than the incumbent (its caller's stop_above_s)
        # by this margin; 0: never; with the minimum never either: its window is the
        # measurement (see aoe_optuna.backends.timing).
        self.early_stop_margin = (float(early_stop_margin) or None
                                  if estimator == "median" else None)
        self.fault = fault
        if work_dir is None:
            remove_orphaned_work_dirs()
            root = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
            self._finalizer = weakref.finalize(self, shutil.rmtree, root, True)
        else:
            root = Path(work_dir)
            self._finalizer = None
        self.work_dir = root
        self.cache = BuildCache(root)

    @classmethod
    def kernel_model(cls) -> CpuKernelModel:
        """The model of the C template on this host: the cpu study's default prior."""
        return kernel_model()

    @classmethod
    def device_rules(cls, profile: SocProfile, dtype: str) -> list[Rule]:
        """What the C template accepts: tiles multiples of 16, from 16 to 512, and none of
        catlass's knobs (it has one L1 depth, one block order, no split-K or padding pass)."""
        lo, hi = TILE_RANGE
        names = {p: None for p in KNOWN_PARAMS}
        categories = {p: info.names for p, info in KNOWN_PARAMS.items()
                      if info.kind == "categorical" and info.names}
        catlass = " and ".join(f"{p} == {v!r}" for p, v in CATLASS_AT_DEFAULT.items())
        return [
            *(compile_expression(f"{t} % 16 == 0 and {lo} <= {t} <= {hi}", names,
                                 name=f"cpu_{t}") for t in ("tile_m", "tile_k", "tile_n")),
            compile_expression(catlass, names, categories, name="cpu_no_catlass_knobs"),
        ]

    @classmethod
    def from_options(cls, options: Mapping[str, Any], profile: SocProfile | None = None
                     ) -> CpuBackend:
        """From a spec's backend section (without ``name``); the SoC profile is not used."""
        del profile
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise ValueError(f"{unknown[0]}: expected one of the cpu backend's options "
                             f"{sorted(_OPTIONS)}, got an unknown key")
        for key, value in options.items():
            _check_option(key, value)
        return cls(**dict(options))

    # ----------------------------------------------------------------- measure
    def measure(self, config: Mapping[str, Any], gemm: Gemm,
                stop_above_s: float | None = None) -> Measurement:
        """Build and time ``config`` on ``gemm``; never raises for a bad candidate.
        ``stop_above_s``: the incumbent's latency; with the median, timing ends early once
        the config is clearly slower (``extra["cut_short"]``, with the median's interval)."""
        if gemm.batch > 1:
            return Measurement.failure("unsupported", f"batch={gemm.batch}: the cpu kernel "
                                       "times one matrix, not a batched launch")
        start = time.perf_counter()

        def cost() -> float:
            return time.perf_counter() - start

        built = self._build(config)
        if isinstance(built, Measurement):
            return Measurement.failure(built.failure_kind or "build", built.reason, cost(),
                                       extra=built.extra)
        kernel, build = built
        if build.failed_run is not None:
            failed = failure_from_run(build.failed_run, "build", "build", cost())
            assert failed is not None
            # a failure the cache remembered was not built again
            return dataclasses.replace(failed, extra={**failed.extra, "build_s": build.seconds,
                                                      "build_cached": build.cached})
        assert build.artifact is not None
        canon = kernel.config
        argv = [
            sys.executable, "-m", "aoe_optuna.backends.cpu.driver", str(build.artifact),
            "--M", str(gemm.M), "--K", str(gemm.K), "--N", str(gemm.N), "--dtype", gemm.dtype,
            "--tile_m", str(canon["tile_m"]), "--tile_n", str(canon["tile_n"]),
            "--tile_k", str(canon["tile_k"]), "--layout", canon["layout"],
            "--quantized", str(int(canon["quantization"])),
            "--output-align", str(canon["output_align"]), *self.timing_args,
        ]
        if stop_above_s is not None and self.early_stop_margin is not None:
            argv += ["--stop-above", repr(float(stop_above_s)),
                     "--stop-margin", repr(self.early_stop_margin)]
        if self.fault in ("segfault", "hang", "wrong"):
            argv += ["--fault", self.fault]
        run = run_limited(argv, self.timeout_s, env={**os.environ, **SINGLE_THREAD_ENV})
        failed = failure_from_run(run, "run", "runtime", cost())
        if failed is not None:
            return failed
        try:
            result = json.loads(run.stdout.strip().splitlines()[-1])
            latency = float(result["latency_s"])
        except (IndexError, ValueError, KeyError, TypeError):
            return Measurement.failure(
                "runtime", f"driver printed no result: {first_lines(run.stdout + run.stderr)}",
                cost())
        extra = {
            "accuracy_loss": result["accuracy_loss"],
            "max_error": result["max_error"],
            "tolerance": result["tolerance"],
            "repeats": result["repeats"],
            "cut_short": bool(result.get("cut_short", False)),
            "interval_s": result.get("interval_s"),
            "gflops": gemm.flops / latency / 1e9,
            "build_cached": build.cached,
            "build_s": build.seconds,
            "flags": " ".join(kernel.flags),
            "compute_dtype": "int8/int32" if canon["quantization"] else "fp32",
        }
        loss = float(result["accuracy_loss"])
        if self.max_accuracy_loss is not None and not loss <= self.max_accuracy_loss:
            return Measurement.failure(
                "accuracy", f"accuracy loss {loss:.3g} exceeds max_accuracy_loss "
                f"{self.max_accuracy_loss:g}", cost(), extra=extra)
        samples = tuple(float(v) for v in result.get("samples_s") or ())
        return Measurement.success(latency, cost(), spread=float(result["spread"]), extra=extra,
                                   samples_s=samples)

    def environment(self) -> dict[str, str]:
        """The compiler (its ``--version`` line) and the CPU model: what the timings of a
        config depend on here besides the config (the toolchain id found when the
        backend was made: a compiler that cannot answer was refused then)."""
        _path, version, machine, cpu = self.compiler.toolchain.split("|", 3)
        stamp = {"backend": self.name, "compiler": version, "cpu": f"{cpu} ({machine})"}
        if self.clock != "wall":  # the wall clock's stamps stay as they were
            stamp["clock"] = self.clock
        if self.estimator != "median":  # a stamp without it was timed by the median
            stamp["estimator"] = self.estimator
        return stamp

    def build_ahead(self, config: Mapping[str, Any], gemm: Gemm) -> BuildAhead | None:
        """Compile ``config``'s library into the build cache (the kernel is the same for
        every GEMM); :meth:`measure` then finds it there, or the failure remembered."""
        del gemm
        built = self._build(config)
        if isinstance(built, Measurement):
            return BuildAhead(0.0, cached=False, ok=False)
        _kernel, build = built
        return BuildAhead(build.seconds, cached=build.cached, ok=build.ok)

    def _build(self, config: Mapping[str, Any]) -> tuple[CpuKernel, BuildResult] | Measurement:
        """The rendered kernel and its build (from the cache, or compiled now), or the
        failure of a config the template or the toolchain refuses."""
        try:
            kernel = render(config)
        except ParamError as exc:
            return Measurement.failure("unsupported", f"config refused: {exc}")
        source = kernel.source
        if self.fault == "build":
            source += "\n#error fault injected by the test-only switch fault='build'\n"
        build = self.cache.get_or_build(
            {SOURCE: source},
            [[*self.compiler.words, *kernel.flags, "-o", LIBRARY, SOURCE]],
            LIBRARY, self.compiler.toolchain, self.build_timeout_s,
        )
        return kernel, build

    def close(self) -> None:
        """Remove the temporary work directory (a given ``work_dir`` is kept)."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> CpuBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_option(key: str, value: Any) -> None:
    typ, _default, ok, expected = _OPTIONS[key]
    if value is None and _default is None:
        return
    if isinstance(value, bool) or not isinstance(value, typ) or not ok(value):
        raise ValueError(f"{key}: expected {expected}, got {value!r}")


def remove_orphaned_work_dirs(tmp: str | None = None) -> int:
    """Remove temporary work dirs whose process is gone (killed before it could clean up)."""
    removed = 0
    for path in Path(tmp or tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*-*"):
        pid_text = path.name[len(TEMP_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or not path.is_dir() or pid_alive(int(pid_text)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed

