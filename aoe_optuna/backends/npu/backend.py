"""The npu backend: build the Ascend C GEMM with the CANN toolkit and time it on an NPU.

One measurement = render the candidate's CMake project (:mod:`.simple_gemm.render`),
build it through the shared build cache (a repeated config is not rebuilt;
a GEMM's shape is a run-time argument, so one build serves every GEMM of a
workload), run the host program under a time limit on one device
(:mod:`.commands`), and read its result line or what msprof wrote
(:mod:`.results`). A compiler error, an ACL error, a crash, a hang or a
wrong result is a failed Measurement with its kind; the study goes on.
With a build pool (``--builders``), ``build_ahead`` runs the build step alone
on a builder, and ``measure`` finds the artifact (or the remembered failure)
in the cache and only times it, under the device's lease.

Kernels: ``kernel: simple`` is the shipped Ascend C kernel above; ``kernel:
catlass`` renders the config as a catlass instantiation (:mod:`.catlass.args`,
:mod:`.catlass.render`) and builds it against a catlass checkout (``catlass``
option or ``$CATLASS_HOME``) with :mod:`.catlass.build`; ``kernel: auto`` (the
default) takes catlass when a checkout is found and the toolkit can build it
(CANN >= 8.2.RC1, or 8.5.0 for checkouts on find_package(ASC)), the simple
kernel otherwise.

Nothing here has run on an NPU: see docs/NPU.md.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from aoe_optuna.backends.base import FAILURE_LOG, BackendBase, BuildAhead, Measurement
from aoe_optuna.backends.kernel_build import BuildCache, failure_from_run, run_limited, run_log
from aoe_optuna.backends.npu.cann import CannToolkit, find_cann
from aoe_optuna.backends.npu.catlass.args import CatlassArgError, catlass_args, shape_reason
from aoe_optuna.backends.npu.catlass.build import (
    CATLASS_RUN_MODES,
    CatlassNotFound,
    catlass_build_commands,
    catlass_build_system,
    catlass_revision,
    compile_option_reason,
    find_catlass,
    render_catlass_project,
    toolkit_reason,
)
from aoe_optuna.backends.npu.commands import (
    ARTIFACT,
    TimingArgs,
    bench_command,
    build_commands,
    build_env,
    msprof_command,
    physical_device,
    run_env,
)
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.backends.npu.results import (
    measurement_from_build_output,
    measurement_from_events,
    measurement_from_msprof,
)
from aoe_optuna.backends.npu.simple_gemm.limits import copy_plan
from aoe_optuna.backends.npu.simple_gemm.limits import shape_reason as simple_shape_reason
from aoe_optuna.backends.npu.simple_gemm.render import (
    RUN_MODES,
    render_project,
    unsupported_reason,
    validate_config,
)
from aoe_optuna.backends.npu.sources import RenderError
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.workload.gemm import Gemm

OPTIONS: dict[str, Any] = {
    "cann": None,  # toolkit; None: $ASCEND_HOME_PATH, $ASCEND_TOOLKIT_HOME, default places
    "kernel": "auto",  # "simple", "catlass", or "auto": catlass where the toolkit builds it
    "catlass": None,  # catlass checkout for kernel=catlass; None: $CATLASS_HOME
    "run_mode": "npu",
    "device": 0,
    "timing": "events",
    "warmup": 5,  # fixed warm-up launches; then warm-up batches until two agree
    "iterations": 10,  # kernel launches between two events (one timed sample)
    "timeout_s": 600.0,  # per build and per run
}
TIMINGS = ("events", "msprof")
KERNELS = ("simple", "catlass")
KERNEL_CHOICES = ("auto", *KERNELS)


# A batched launch is catlass's Gemm::Kernel::BatchedMatmul (examples/01_batched_matmul):
# another kernel template and host program than the two this backend renders.
BATCHED_REFUSAL = ("batch={batch}: a batched GEMM runs catlass's Gemm::Kernel::BatchedMatmul "
                   "(examples/01_batched_matmul), which the npu backend does not render")


@dataclasses.dataclass(frozen=True)
class GemmBuild:
    """A GEMM config's build: its project files, build commands and toolchain key (the
    build cache's key), and the copy plan when some operand is copied row by row."""

    files: Mapping[str, str]
    commands: list[list[str]]
    toolchain: str
    copy_plan: dict[str, str] | None = None


def default_cache_root() -> Path:
    base = os.environ.get("AOE_BUILD_CACHE") or Path.home() / ".cache" / "aoe_optuna"
    return Path(base) / "npu"


class NpuBackend(BackendBase):
    """Builds and times configs of the shipped Ascend C GEMM kernel."""

    name = "npu"
    # builds on host cores, timings on the card, its launcher on a core no builder uses
    pooled_by_default = True
    simulator_prior_by_default = True
    host_core_per_device = True
    cann_toolchain = True
    layer_kernels = "device"

    @classmethod
    def leased_device(cls) -> str:
        """The worker's card (the first of its visible devices)."""
        return f"npu-{os.environ.get('ASCEND_RT_VISIBLE_DEVICES', '0').split(',')[0]}"

    def __init__(
        self,
        toolkit: CannToolkit,
        profile: SocProfile,
        run_mode: str = "npu",
        device: int = 0,
        timing: str = "events",
        timing_args: TimingArgs | None = None,
        timeout_s: float = 600.0,
        cache: BuildCache | None = None,
        choices: Mapping[str, Sequence[Any]] | None = None,
        kernel: str = "simple",
        catlass_home: Path | None = None,
        layer_catlass: Path | None = None,
    ) -> None:
        self.toolkit = toolkit
        self.profile = profile
        self.run_mode = run_mode
        self.device = device
        self.timing = timing
        self.timing_args = timing_args or TimingArgs()
        self.timeout_s = timeout_s
        self.cache = cache or BuildCache(default_cache_root())
        self.choices = choices  # the space's choices, when the caller has them
        if kernel not in KERNELS:
            raise ValueError(f"kernel: expected one of {list(KERNELS)}, got {kernel!r}")
        if kernel == "catlass" and catlass_home is None:
            raise ValueError("kernel=catlass needs the catlass checkout (catlass_home)")
        self.kernel = kernel
        self.catlass_home = catlass_home
        # the checkout the attention kinds build against, whatever the GEMM's kernel
        self.layer_catlass = catlass_home if layer_catlass is None else layer_catlass

    @classmethod
    def from_options(cls, options: Mapping[str, Any], profile: SocProfile) -> NpuBackend:
        """Check the options, then find the toolkit (CannNotFound, a ValueError, if absent)
        and, for catlass, a checkout this toolkit can build."""
        opts = parse_options(options)
        if opts["kernel"] == "catlass":
            find_catlass(opts["catlass"])  # its own one-line error before the toolkit's
        physical_device(opts["device"], opts["run_mode"], os.environ)  # "device: ..." if bad
        toolkit = find_cann(opts["cann"])
        kernel, home = choose_kernel(opts["kernel"], opts["catlass"], toolkit, opts["run_mode"])
        try:
            layer_catlass: Path | None = find_catlass(opts["catlass"])
        except CatlassNotFound:
            layer_catlass = None
        return cls(
            toolkit,
            profile,
            run_mode=opts["run_mode"],
            device=opts["device"],
            timing=opts["timing"],
            timing_args=TimingArgs(warmup=opts["warmup"], launches=opts["iterations"]),
            timeout_s=opts["timeout_s"],
            kernel=kernel,
            catlass_home=home,
            layer_catlass=layer_catlass,
        )

    def environment(self) -> dict[str, str]:
        """CANN, driver, firmware, SoC and card (:mod:`.environment`)."""
        from aoe_optuna.backends.npu.environment import npu_environment

        return npu_environment(self.toolkit.version, self.profile.soc, self.device)

    def target(self) -> NpuTarget:
        """What a layer kind's program is rendered for (:mod:`.kernel_program`)."""
        home = self.layer_catlass
        return NpuTarget(self.toolkit, self.run_mode, home,
                         catlass_build_system(home) if home is not None else "asc",
                         catlass_revision(home) if home is not None else "unknown")

    def measure_program(self, program: KernelProgram) -> Measurement:
        """A layer kernel with its host program (an operator kind's, :mod:`.kernel_program`):
        built through the build cache, run and read as the GEMM's program is, with the
        same timing policy, failure kinds and device."""
        if self.run_mode not in program.run_modes:
            return Measurement.failure("unsupported", f"run_mode={self.run_mode}: "
                                       f"{program.what} runs in {list(program.run_modes)}")
        return self._build_and_run(
            program.files, program.build, f"{self.toolkit.toolchain_id}|{program.toolchain}",
            lambda installed, device: program.argv(installed, self.timing_args, device))

    def build_program_ahead(self, program: KernelProgram) -> BuildAhead:
        """Compile a layer kernel's program into the build cache on this host core, so
        that :meth:`measure_program` only runs it (a build pool's step, as
        :meth:`build_ahead` for a GEMM); a failed build is reported by the measure."""
        if self.run_mode not in program.run_modes:
            return BuildAhead(0.0, cached=False, ok=False)
        built = self.cache.get_or_build(
            dict(program.files), program.build, ARTIFACT,
            f"{self.toolkit.toolchain_id}|{program.toolchain}", self.timeout_s,
            env=build_env(self.toolkit, os.environ))
        return BuildAhead(built.seconds, cached=built.cached, ok=built.ok)

    def measure(self, config: Mapping[str, Any], gemm: Gemm) -> Measurement:
        build = self._gemm_build(config, gemm)
        if isinstance(build, Measurement):
            return build
        measured = self._build_and_run(build.files, build.commands, build.toolchain,
                                       self._gemm_argv(gemm))
        if build.copy_plan is not None:
            # Correct but slower: strides past 16 bits are copied row by row (limits.py).
            return replace(measured, extra={**measured.extra, "copy_plan": build.copy_plan})
        return measured

    def build_ahead(self, config: Mapping[str, Any], gemm: Gemm) -> BuildAhead | None:
        """Compile ``config``'s GEMM (the simple kernel or its catlass instantiation) into
        the build cache on this host core, so that :meth:`measure` only times it on the
        device; a refused config or a failed build is reported by ``measure`` as always
        (the cache remembers the failure)."""
        build = self._gemm_build(config, gemm)
        if isinstance(build, Measurement):
            return BuildAhead(0.0, cached=False, ok=False)
        built = self.cache.get_or_build(dict(build.files), build.commands, ARTIFACT,
                                        build.toolchain, self.timeout_s,
                                        env=build_env(self.toolkit, os.environ))
        return BuildAhead(built.seconds, cached=built.cached, ok=built.ok)

    def _gemm_build(self, config: Mapping[str, Any], gemm: Gemm) -> GemmBuild | Measurement:
        """What ``config``'s GEMM kernel builds from, or why it is not built."""
        if gemm.batch > 1:
            return Measurement.failure("unsupported", BATCHED_REFUSAL.format(batch=gemm.batch))
        try:
            cfg = validate_config(config, self.choices)
        except RenderError as exc:
            return Measurement.failure("infeasible", str(exc))
        if self.kernel == "catlass":
            return self._catlass_build(cfg, gemm)
        why = (unsupported_reason(cfg, gemm.dtype, gemm.K)
               or simple_shape_reason(gemm.M, gemm.K, gemm.N))
        if why is not None:
            return Measurement.failure("unsupported", why)
        plan = copy_plan(cfg, gemm.M, gemm.K, gemm.N)
        return GemmBuild(render_project(cfg, gemm.dtype, self.profile, self.run_mode),
                         build_commands(self.toolkit, self.profile.soc, self.run_mode),
                         self.toolkit.toolchain_id,
                         plan if any(v != "one" for v in plan.values()) else None)

    def _catlass_build(self, cfg: Mapping[str, Any], gemm: Gemm) -> GemmBuild | Measurement:
        """The config as a catlass instantiation; what catlass lacks is ``unsupported``."""
        assert self.catlass_home is not None
        if self.run_mode not in CATLASS_RUN_MODES:
            return Measurement.failure("unsupported", f"run_mode={self.run_mode}: the catlass "
                                       f"kernel runs in {list(CATLASS_RUN_MODES)}")
        try:
            args = catlass_args(cfg, self.profile, gemm.dtype)
        except CatlassArgError as exc:
            return Measurement.failure("unsupported", str(exc))
        why = compile_option_reason(cfg) or shape_reason(args, gemm.M, gemm.K, gemm.N)
        if why is not None:
            return Measurement.failure("unsupported", why)
        build_system = catlass_build_system(self.catlass_home)
        return GemmBuild(
            render_catlass_project(args, cfg, self.profile, self.run_mode, build_system),
            catlass_build_commands(self.catlass_home, args, self.run_mode),
            f"{self.toolkit.toolchain_id}|catlass|{self.catlass_home.resolve()}|"
            f"{catlass_revision(self.catlass_home)}")

    def _gemm_argv(self, gemm: Gemm) -> Callable[[Path, int], list[str]]:
        return lambda installed, device: bench_command(installed, gemm, self.timing_args,
                                                       device)

    def _build_and_run(self, files: Mapping[str, str], commands: list[list[str]],
                       toolchain: str, argv: Callable[[Path, int], list[str]]) -> Measurement:
        env = build_env(self.toolkit, os.environ)
        built = self.cache.get_or_build(
            dict(files), commands, ARTIFACT, toolchain, self.timeout_s, env=env,
        )
        if not built.ok:
            run = built.failed_run
            assert run is not None
            if run.timed_out:
                failed = failure_from_run(run, "build", "build", cost_s=built.seconds)
                assert failed is not None
                return failed
            failed = measurement_from_build_output(run.stdout + "\n" + run.stderr,
                                                   built.seconds)
            # the whole log, for the failed trial's artifact (study.run.objective uploads it)
            return dataclasses.replace(failed, extra={**failed.extra, "build_s": built.seconds,
                                                      FAILURE_LOG: run_log(run)})
        assert built.artifact is not None
        measured = self._run(built.artifact, argv, built.seconds)
        # the build's part of the cost (0: the cache had it), so that a serial run's
        # summary splits build from timing as a pooled one's does
        return dataclasses.replace(measured, extra={**(measured.extra or {}),
                                                    "build_s": built.seconds,
                                                    "build_cached": built.cached})

    def _run(self, artifact: Path, argv: Callable[[Path, int], list[str]],
             build_s: float) -> Measurement:
        try:
            device = physical_device(self.device, self.run_mode, os.environ)
        except ValueError as exc:
            return Measurement.failure("runtime", str(exc), build_s)
        bench = argv(artifact, device)
        under_msprof = self.timing == "msprof"
        env = run_env(self.toolkit, self.profile.soc, self.run_mode, artifact, os.environ,
                      under_msprof=under_msprof)
        if not under_msprof:
            run = run_limited(bench, self.timeout_s, env=env)
            cost = build_s + run.elapsed_s
            return _crash(run, cost) or measurement_from_events(run.stdout, cost)
        msprof = self.toolkit.msprof()
        if msprof is None:
            return Measurement.failure("runtime", "timing=msprof but no msprof under "
                                       f"{self.toolkit.home}/tools/profiler/bin or on PATH")
        with tempfile.TemporaryDirectory(prefix="aoe-msprof-") as out:
            argv = msprof_command(msprof, bench, Path(out), self.run_mode, self.profile.soc,
                                  self.timing_args)
            run = run_limited(argv, self.timeout_s, env=env)
            cost = build_s + run.elapsed_s
            return _crash(run, cost) or measurement_from_msprof(Path(out), run.stdout, cost,
                                                                self.run_mode)


def _crash(run: Any, cost: float) -> Measurement | None:
    """A timeout or a signal; plain non-zero exits are read from the result line instead."""
    if run.timed_out or run.signal_name is not None:
        return failure_from_run(run, "run", cost_s=cost)
    return None


def choose_kernel(kernel: str, catlass: str | None, toolkit: CannToolkit,
                  run_mode: str) -> tuple[str, Path | None]:
    """The kernel to measure and the catlass checkout for it.

    ``catlass``: the checkout must exist and the toolkit build it (else a one-line
    ValueError). ``auto``: catlass when both hold and the run mode has it, else simple.
    """
    if kernel == "simple":
        return "simple", None
    if kernel == "catlass":
        home = find_catlass(catlass)
        why = toolkit_reason(toolkit, home)
        if why is not None:
            raise ValueError(f"kernel: {why}")
        return "catlass", home
    if run_mode not in CATLASS_RUN_MODES:
        return "simple", None
    try:
        home = find_catlass(catlass)
    except CatlassNotFound:
        if catlass is not None:
            raise
        return "simple", None
    return ("simple", None) if toolkit_reason(toolkit, home) else ("catlass", home)


def parse_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options with defaults filled in; a bad one is a ValueError naming its key."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"{unknown[0]}: expected one of the options {sorted(OPTIONS)}, "
                         f"got {unknown[0]!r}")
    opts = {**OPTIONS, **options}
    if opts["cann"] is not None and not isinstance(opts["cann"], str):
        raise ValueError(f"cann: expected the toolkit directory as a string, got {opts['cann']!r}")
    if opts["kernel"] not in KERNEL_CHOICES:
        raise ValueError(f"kernel: expected one of {list(KERNEL_CHOICES)}, "
                         f"got {opts['kernel']!r}")
    if opts["catlass"] is not None and not isinstance(opts["catlass"], str):
        raise ValueError(f"catlass: expected the catlass checkout as a string, "
                         f"got {opts['catlass']!r}")
    if opts["run_mode"] not in RUN_MODES:
        raise ValueError(f"run_mode: expected one of {list(RUN_MODES)}, got {opts['run_mode']!r}")
    if opts["timing"] not in TIMINGS:
        raise ValueError(f"timing: expected one of {list(TIMINGS)}, got {opts['timing']!r}")
    if opts["timing"] == "msprof" and opts["run_mode"] == "cpu":
        raise ValueError("timing: expected 'events' with run_mode cpu (msprof profiles npu "
                         "and sim), got 'msprof'")
    for key, lo in (("device", 0), ("warmup", 0), ("iterations", 1)):
        v = opts[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{key}: expected an integer >= {lo}, got {v!r}")
    t = opts["timeout_s"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0:
        raise ValueError(f"timeout_s: expected a positive number of seconds, got {t!r}")
    opts["timeout_s"] = float(t)
    return opts
