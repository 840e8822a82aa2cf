"""``aoe-tune doctor``: is this machine ready for the npu backend, and what would it run?

Without ``--dry-run`` it reports the CANN toolkit (where, which version, found
how), the NPUs ``npu-smi`` lists, and for each run mode, the catlass kernel and
msprof timing, what is there and what is missing with how to get it. Exit 0
when the run mode asked for (``--mode``, default npu) has all it needs, 1 when
something is missing.

With ``--dry-run --config SPEC`` it renders one candidate of the spec (its
baseline, else the defaults) for the workload's first GEMM, writes the build
tree under ``--out`` and prints every command the backend would run, with its
environment, without running any; for each kind of attention, vector and gating
kernel the spec tunes, the same for its first problem at CANN's default tiling,
under ``--out/<op>``. Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

EXAMPLES = """\
examples:
  # what the npu backend finds on this machine, and what is missing
  aoe-tune doctor
  # the same for the simulator, with a toolkit and catlass that are not in the environment
  aoe-tune doctor --mode sim --cann /usr/local/Ascend/cann --catlass ~/catlass
  # the build tree and every command one measurement of a spec would run, run nothing
  aoe-tune doctor --dry-run --config studies/gemm_npu_910b2.toml --out /tmp/aoe-dry-run
  # the same for every operator of a Qwen2.5-7B decode layer on the chip
  aoe-tune doctor --dry-run --config studies/qwen25_7b_decode_layer_npu_910b2.json
"""
DEFAULT_OUT = "aoe-npu-dry-run"
MODES = ("npu", "sim", "cpu")


class _UsageError(Exception):
    """Bad command-line input: one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see {self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="aoe-tune doctor",
                description="Check this machine for the npu backend (CANN toolkit, devices, "
                "each run mode, catlass, msprof), or dry-run one measurement of a spec.",
                epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=MODES, default="npu",
                   help="the run mode whose needs decide the exit status (default npu)")
    p.add_argument("--soc", default=None,
                   help="SoC for the sim/cpu checks, e.g. Ascend910B3 (default: the first "
                   "device's, else Ascend910B3)")
    p.add_argument("--cann", default=None, help="toolkit directory (default: $ASCEND_HOME_PATH, "
                   "$ASCEND_TOOLKIT_HOME, then the default install places)")
    p.add_argument("--catlass", default=None, help="catlass checkout (default: $CATLASS_HOME)")
    p.add_argument("--dry-run", action="store_true",
                   help="render one candidate of --config, write its build tree, print the "
                   "commands; run nothing")
    p.add_argument("--config", help="study spec for --dry-run (its backend must be npu)")
    p.add_argument("--out", default=DEFAULT_OUT,
                   help=f"where --dry-run writes the build tree (default ./{DEFAULT_OUT})")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.dry_run:
            return _dry_run(args)
        if args.config:
            raise _UsageError("--config: expected together with --dry-run")
        return _report(args)
    except _UsageError as exc:
        print(f"aoe-tune doctor: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def _report(args: argparse.Namespace) -> int:
    from aoe_optuna.backends.npu.requirements import (
        catlass_findings,
        device_findings,
        host_tool_findings,
        locate_toolkit,
        mode_findings,
        msprof_finding,
        version_finding,
    )

    env = dict(os.environ)
    toolkit, where = locate_toolkit(args.cann, env)
    findings = [where]
    devices = device_findings()
    findings += devices
    soc = args.soc or _first_soc(devices[0].text) or "Ascend910B3"
    tools = host_tool_findings()
    findings += tools
    needed_ok = toolkit is not None and all(f.ok for f in tools)
    if toolkit is not None:
        findings.append(version_finding(toolkit))
        for mode in MODES:
            found = mode_findings(toolkit, soc, mode)
            findings += found
            if mode == args.mode:
                needed_ok = needed_ok and all(f.ok for f in found)
        findings += catlass_findings(toolkit, args.catlass, env)
        findings.append(msprof_finding(toolkit))
    if args.mode == "npu":
        needed_ok = needed_ok and devices[0].ok
    for f in findings:
        print(f.line())
    missing = sum(not f.ok for f in findings)
    verdict = "ready" if needed_ok else "not ready"
    print(f"run_mode {args.mode} ({soc}): {verdict}; {missing} finding(s) missing")
    return 0 if needed_ok else 1


def _first_soc(devices_line: str) -> str | None:
    for part in devices_line.split(","):
        name = part.split(":")[-1].strip()
        if name.startswith("Ascend"):
            return name
    return None


def _dry_run(args: argparse.Namespace) -> int:
    if not args.config:
        raise _UsageError("--dry-run: expected --config SPEC")
    from aoe_optuna.backends.npu.dry_run import dry_run
    from aoe_optuna.hardware.profile import ProfileError
    from aoe_optuna.space.params import ParamError, default_config
    from aoe_optuna.spec.loader import SpecError, load_spec

    try:
        spec = load_spec(args.config)
    except (SpecError, ProfileError, ParamError, OSError, ValueError) as exc:
        raise _UsageError(str(exc)) from None
    backend = dict(spec.backend)
    if not spec.backend_kind.cann_toolchain:
        raise _UsageError(f"{args.config}: backend.name: expected 'npu' for a dry run, "
                          f"got {backend.get('name')!r}")
    options = {k: v for k, v in backend.items() if k != "name"}
    if args.cann is not None:
        options["cann"] = args.cann
    if args.catlass is not None:
        options["catlass"] = args.catlass
    config = {**default_config(), **(spec.baseline or {})}
    gemm = spec.workload.gemms[0]
    try:
        plan = dry_run(options, spec.profile, config, gemm, Path(args.out))
    except ValueError as exc:  # a bad backend option or config, an absent catlass checkout
        raise _UsageError(f"{args.config}: {exc}") from None
    for line in plan.lines:
        print(line)
    layer = _dry_run_layer(args, options, spec, said=plan.lines)
    return 0 if plan.ok and layer else 1


def _dry_run_layer(args: argparse.Namespace, options: dict[str, Any], spec: Any,
                   said: list[str]) -> bool:
    """Per kind of the spec's tuned attention, vector and gating kernels (its first
    problem of each), the build tree of the kind's program at CANN's default tiling under
    <out>/<op> and every command one measurement runs; a kind the backend cannot time is
    one line saying why (the run tunes the rest). A missing checkout the GEMM's plan
    (``said``) already named is not named again. True when there is nothing to refuse."""
    from aoe_optuna.backends.npu.dry_run import dry_run_program, dry_target
    from aoe_optuna.backends.npu.kernel_program import ProgramUnavailable
    from aoe_optuna.operators.layer_ops import layer_operators

    firsts: dict[str, Any] = {}
    for op in layer_operators(spec.workload):
        firsts.setdefault(op.op_name, op)
    if not firsts:
        return True
    try:
        target, notes = dry_target(options)
    except ValueError as exc:
        raise _UsageError(f"{args.config}: {exc}") from None
    for line in notes:
        missing = line.split(";")[0]
        if not any(earlier.startswith(missing) for earlier in said):
            print(line)
    for name, op in firsts.items():
        config = op.default_config(spec.profile)
        try:
            program = op.operator_kind.npu_program(op.problem, op.dtype, config, spec.profile,
                                                   target)
        except ProgramUnavailable as exc:
            print(f"# {name} {op.dims}: not timed on the npu backend: {exc}")
            continue
        title = (f"{name} {op.dims}: config "
                 + " ".join(f"{k}={v}" for k, v in sorted(config.items())))
        plan = dry_run_program(options, spec.profile, program, title, target,
                               Path(args.out) / name)
        for line in plan.lines:
            print(line)
    return True
