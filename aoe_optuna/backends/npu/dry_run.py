"""A measurement of the npu backend without running anything: the build tree and the commands.

``aoe-tune doctor --dry-run`` renders one candidate (the spec's baseline, else
the defaults) for the first GEMM of the workload, writes its CMake project to a
directory, and lists, in order, every command the backend would run there
with the environment it would set, as shell lines a user can paste. Without a
toolkit the commands name ``$ASCEND_HOME_PATH``. A spec that tunes attention, the
vector kernels or the MoE gating also gets, per kind, the build tree of its kind's
program (:mod:`.kernel_program`) at CANN's default tiling and every command one
measurement of it runs (:func:`dry_run_program`, on the target :func:`dry_target`
names: placeholders where no toolkit or catlass checkout is found).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aoe_optuna.backends.npu.backend import choose_kernel, parse_options
from aoe_optuna.backends.npu.cann import CannNotFound, CannToolkit, find_cann
from aoe_optuna.backends.npu.catlass.args import CatlassArgError, catlass_args
from aoe_optuna.backends.npu.catlass.args import shape_reason as catlass_shape_reason
from aoe_optuna.backends.npu.catlass.build import (
    CatlassNotFound,
    catlass_build_commands,
    catlass_build_system,
    catlass_revision,
    compile_option_reason,
    find_catlass,
    render_catlass_project,
)
from aoe_optuna.backends.npu.commands import (
    ARTIFACT,
    VISIBLE_DEVICES,
    TimingArgs,
    bench_command,
    build_commands,
    build_env,
    msprof_command,
    physical_device,
    run_env,
)
from aoe_optuna.backends.npu.kernel_program import KernelProgram, NpuTarget
from aoe_optuna.backends.npu.simple_gemm.limits import shape_reason
from aoe_optuna.backends.npu.simple_gemm.render import (
    render_project,
    unsupported_reason,
    validate_config,
)
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.workload.gemm import Gemm

PLACEHOLDER_HOME = Path("$ASCEND_HOME_PATH")
PLACEHOLDER_CATLASS = Path("$CATLASS_HOME")
# Variables the backend sets; PATH and LD_LIBRARY_PATH keep the user's value behind ours.
SHOWN = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "PATH", "LD_LIBRARY_PATH", "LD_PRELOAD")


@dataclass(frozen=True)
class DryRun:
    """The plan: ``lines`` to print; ``ok`` False when the candidate would be refused."""

    lines: list[str]
    ok: bool


def dry_run(options: Mapping[str, Any], profile: SocProfile, config: Mapping[str, Any],
            gemm: Gemm, out: Path, env: Mapping[str, str] | None = None) -> DryRun:
    """Write the candidate's project under ``out`` and return what would run, in order.

    ``options`` are the spec's backend options (a ValueError names a bad one).
    """
    env = os.environ if env is None else env
    opts = parse_options(options)
    lines: list[str] = []
    try:
        toolkit = find_cann(opts["cann"], env)
        lines.append(f"# toolkit {toolkit.home} (CANN {toolkit.version}, by {toolkit.found_by})")
    except CannNotFound as exc:
        toolkit = CannToolkit(PLACEHOLDER_HOME, "unknown", "nothing")
        lines.append(f"# {exc}")
        lines.append("# the commands below name $ASCEND_HOME_PATH in its place")
    if toolkit.home == PLACEHOLDER_HOME and opts["kernel"] == "auto":
        kernel, catlass_home = "simple", None
    elif toolkit.home == PLACEHOLDER_HOME and opts["kernel"] == "catlass":
        # nothing to check the checkout against: name it, or $CATLASS_HOME in its place
        kernel = "catlass"
        try:
            catlass_home = find_catlass(opts["catlass"], env)
        except CatlassNotFound as exc:
            lines.append(f"# {exc}; the commands below name $CATLASS_HOME in its place")
            catlass_home = PLACEHOLDER_CATLASS
    else:
        kernel, catlass_home = choose_kernel(opts["kernel"], opts["catlass"], toolkit,
                                             opts["run_mode"])
    cfg = validate_config(config)
    lines.append(f"# kernel {kernel}, run_mode {opts['run_mode']}, timing {opts['timing']}, "
                 f"soc {profile.soc}")
    lines.append(f"# gemm {gemm.name or 'gemm'}: M={gemm.M} K={gemm.K} N={gemm.N} {gemm.dtype}")
    lines.append("# config " + " ".join(f"{k}={v}" for k, v in sorted(cfg.items())))
    if kernel == "catlass":
        assert catlass_home is not None
        try:
            args = catlass_args(cfg, profile, gemm.dtype)
        except CatlassArgError as exc:
            return DryRun(lines + [f"# refused before any build: {exc}"], False)
        why = compile_option_reason(cfg) or catlass_shape_reason(args, gemm.M, gemm.K, gemm.N)
        files = render_catlass_project(args, cfg, profile, opts["run_mode"],
                                       catlass_build_system(catlass_home))
        commands = catlass_build_commands(catlass_home, args, opts["run_mode"])
    else:
        why = unsupported_reason(cfg, gemm.dtype, gemm.K) or shape_reason(gemm.M, gemm.K, gemm.N)
        files = render_project(cfg, gemm.dtype, profile, opts["run_mode"]) if why is None else {}
        commands = build_commands(toolkit, profile.soc, opts["run_mode"])
    if why is not None:
        return DryRun(lines + [f"# refused before any build: {why}"], False)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(files.items()):
        (out / name).write_text(text)
        lines.append(f"# wrote {out / name}")
    lines.append(f"cd {_word(str(out))}")
    build_vars = build_env(toolkit, _shell_base())
    lines += list(_exports(build_vars, {}))
    lines += [_join(c) for c in commands]
    timing = TimingArgs(warmup=opts["warmup"], launches=opts["iterations"])
    artifact = out / ARTIFACT
    device = physical_device(opts["device"], opts["run_mode"], env)
    bench = bench_command(artifact, gemm, timing, device)
    under_msprof = opts["timing"] == "msprof"
    placeholder = toolkit.home == PLACEHOLDER_HOME
    lines += list(_exports(run_env(toolkit, profile.soc, opts["run_mode"], artifact,
                                   _shell_base(), under_msprof=under_msprof,
                                   keep_missing=placeholder), build_vars))
    lines.append(f"unset {VISIBLE_DEVICES}")
    if under_msprof:
        msprof = toolkit.msprof() or toolkit.home / "tools" / "profiler" / "bin" / "msprof"
        lines.append(_join(msprof_command(msprof, bench, out / "msprof", opts["run_mode"],
                                          profile.soc, timing)))
    else:
        lines.append(_join(bench))
    return DryRun(lines, True)


def _shell_base() -> dict[str, str]:
    """A base environment whose PATH and LD_LIBRARY_PATH are the shell's own, unexpanded."""
    return {"PATH": "$PATH", "LD_LIBRARY_PATH": "$LD_LIBRARY_PATH"}


def _exports(env: Mapping[str, str], before: Mapping[str, str]) -> Iterator[str]:
    """``export`` lines for what ``env`` sets beyond the shell's own and ``before``."""
    base = _shell_base()
    for name in SHOWN:
        if name in env and env[name] != base.get(name) and env[name] != before.get(name):
            yield f"export {name}={_word(env[name])}"


def _word(text: str) -> str:
    """One shell word; a ``$VARIABLE`` in it stays expandable (double quotes)."""
    if "$" not in text:
        return shlex.quote(text)
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    return f'"{escaped}"'


def _join(argv: list[str]) -> str:
    return " ".join(_word(a) for a in argv)


def dry_target(options: Mapping[str, Any],
               env: Mapping[str, str] | None = None) -> tuple[NpuTarget, list[str]]:
    """The target a layer kind's program is rendered for in a dry run, and comment lines
    saying what stands in for what is missing: the toolkit (``$ASCEND_HOME_PATH``) and
    the catlass checkout (``$CATLASS_HOME``)."""
    env = os.environ if env is None else env
    opts = parse_options(options)
    lines: list[str] = []
    try:
        toolkit = find_cann(opts["cann"], env)
    except CannNotFound:
        toolkit = CannToolkit(PLACEHOLDER_HOME, "unknown", "nothing")
    try:
        home = find_catlass(opts["catlass"], env)
        build_system, revision = catlass_build_system(home), catlass_revision(home)
    except CatlassNotFound as exc:
        lines.append(f"# {exc}; the catlass commands name $CATLASS_HOME in its place")
        home, build_system, revision = PLACEHOLDER_CATLASS, "asc", "unknown"
    return NpuTarget(toolkit, opts["run_mode"], home, build_system, revision), lines


def dry_run_program(options: Mapping[str, Any], profile: SocProfile, program: KernelProgram,
                    title: str, target: NpuTarget, out: Path,
                    env: Mapping[str, str] | None = None) -> DryRun:
    """Write a layer kind's build tree (``program``) under ``out`` and list, in order,
    every command one measurement of it runs: the build, the run environment and the
    program with the timing arguments the backend passes (under msprof with
    ``timing: msprof``)."""
    env = os.environ if env is None else env
    opts = parse_options(options)
    lines = [f"# {title}", f"# kernel: {program.what}"]
    lines += [f"# {note}" for note in program.notes]
    out.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(program.files.items()):
        (out / name).write_text(text)
        lines.append(f"# wrote {out / name}")
    toolkit = target.toolkit
    lines.append(f"cd {_word(str(out))}")
    build_vars = build_env(toolkit, _shell_base())
    lines += list(_exports(build_vars, {}))
    lines += [_join(c) for c in program.build]
    timing = TimingArgs(warmup=opts["warmup"], launches=opts["iterations"])
    artifact = out / ARTIFACT
    device = physical_device(opts["device"], target.run_mode, env)
    argv = program.argv(artifact, timing, device)
    under_msprof = opts["timing"] == "msprof"
    lines += list(_exports(run_env(toolkit, profile.soc, target.run_mode, artifact,
                                   _shell_base(), under_msprof=under_msprof,
                                   keep_missing=toolkit.home == PLACEHOLDER_HOME), build_vars))
    lines.append(f"unset {VISIBLE_DEVICES}")
    if under_msprof:
        msprof = toolkit.msprof() or toolkit.home / "tools" / "profiler" / "bin" / "msprof"
        lines.append(_join(msprof_command(msprof, argv, out / "msprof", target.run_mode,
                                          profile.soc, timing)))
    else:
        lines.append(_join(argv))
    return DryRun(lines, True)
