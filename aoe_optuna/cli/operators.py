"""``aoe-tune operators``: tune each GEMM shape of a workload in a study of its own, and
its attention (decode or prefill) and vector kernels where the spec says "tuned"."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aoe_optuna.attrs import SCHEDULER_ATTR
from aoe_optuna.cli.common import WORKERS_PER_CPU, UsageError, add_kb_replace
from aoe_optuna.samplers.registry import DEFAULT_SAMPLER

if TYPE_CHECKING:
    from aoe_optuna.backends.base import BackendBase

EXAMPLES = """\
examples:
  # every GEMM shape of Qwen2.5-7B decode, 400 measurements spent where they pay most
  aoe-tune operators --config studies/qwen25_7b_decode_catlass_910b2.json --n-trials 400
  # resume it (the plan, the spec and the sampler are stored), with more budget
  aoe-tune operators --storage sqlite:///aoe.db \\
      --study-name CatlassDecodeGemm-Ascend910B2-qwen2.5-7b-decode-b1-operators --n-trials 600
  # served with tensor parallelism over 8 cards: per-card shapes, all-reduce in the step
  aoe-tune operators --config studies/qwen25_7b_decode_catlass_910b2.json --num-devices 8
  # one worker per NPU on this host; results into a knowledge base, kernels into a folder
  aoe-tune operators --config SPEC --devices 0,1,2,3 --kb aoe_kb.json --export-dir kernels/
  # a worker on another host joins a run on PostgreSQL
  aoe-tune operators --storage postgresql://user@db/aoe --study-name NAME --follow
  # the studies a run on the chip would make and what times each kernel; runs nothing
  aoe-tune operators --config studies/qwen25_7b_decode_layer_npu_910b2.json --dry-run

exit status:
  0    done (with --export-dir: every kernel written)
  2    bad input: one line on stderr, nothing written
  3    tuned and stored, but --export-dir could not write some kernel: one line each
       says why, and the last line on stderr names them all (their tunings are in their
       studies and, with --kb, the knowledge base)
  4    nothing could be measured: every measurement of every operator failed (the
       last line on stderr says how)
  130  interrupted; the measurements are stored, the same command resumes
"""

DEFAULT_BUDGET = 200
NOT_EXPORTED = 3  # exit status: tuned and stored, some kernel not written (EXAMPLES)
NOTHING_MEASURED = 4  # exit status: every measurement of every operator failed (EXAMPLES)


def parser(prog: str = "aoe-tune operators") -> argparse.ArgumentParser:
    from aoe_optuna.operators.scheduler import SCHEDULERS
    from aoe_optuna.samplers.registry import sampler_names
    from aoe_optuna.study.storage.opening import DEFAULT_STORAGE

    p = argparse.ArgumentParser(
        prog=prog, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Tune every distinct GEMM shape of a workload in a study of its own "
        "(<study>/<op>/<MxNxK>), and its attention (decode or prefill) and vector kernels "
        "where the spec's workload says \"attention\": \"tuned\" or \"vector_kernels\": \"tuned\" "
        "(<study>/attention/<dims>, <study>/rmsnorm/<rows>x<width>, ...), one measurement "
        "budget shared by a scheduler, each winner re-timed and stored in the knowledge "
        "base.",
    )
    p.add_argument("--config", help="study spec (its workload gives the shapes)")
    p.add_argument("--storage", default=DEFAULT_STORAGE,
                   help=f"Optuna storage URL or journal file (default {DEFAULT_STORAGE})")
    p.add_argument("--study-name", help="the run's parent study (default: the spec's name "
                   "+ '-operators'); shapes' studies are named <study>/<op>/<MxNxK>")
    p.add_argument("--n-trials", type=int, default=None,
                   help=f"measurements in all shapes together, re-timing included "
                   f"(default {DEFAULT_BUDGET})")
    p.add_argument("--scheduler", choices=sorted(SCHEDULERS), default=None,
                   help="how the budget is spread: gradient (expected end-to-end gain, "
                   "the default) or round-robin")
    p.add_argument("--warm-start", action=argparse.BooleanOptionalAction, default=None,
                   help="start each GEMM shape and attention problem from the winners of "
                   "its neighbours in the run and in the knowledge base (default on; a "
                   "resume keeps the run's setting)")
    p.add_argument("--kb", default=None,
                   help="knowledge base JSON: read for warm starts, each shape's winner merged in")
    add_kb_replace(p)
    p.add_argument("--export-dir", default=None,
                   help="write each shape's kernel here (catlass header; kernel source with "
                   "--op-source)")
    p.add_argument("--op-source", default=None, help="kernel source to rewrite per shape")
    p.add_argument("--sampler", default=None,
                   help=f"one of {', '.join(sampler_names())} (default {DEFAULT_SAMPLER})")
    p.add_argument("--sampler-kwargs", default=None, help="JSON object for the sampler")
    p.add_argument("--seed", type=int, default=None, help="sampler seed")
    p.add_argument("--num-devices", type=int, default=None,
                   help="tensor-parallel degree the model is served with (AOE's --num-devices): "
                   "per-card shapes and the all-reduce in the step time")
    p.add_argument("--n-workers", type=int, default=None,
                   help="worker processes measuring each chunk (default 1, or one per device)")
    p.add_argument("--devices", default=None, help="device ids, one worker each, e.g. 0,1,2,3")
    p.add_argument("--builders", type=int, default=None, metavar="B",
                   help="build ahead in every operator's study: B builder cores compile the "
                   "configs proposed next while each worker's device times one at a time, "
                   "and a chunk holds at least as many measurements as are in flight; 0: "
                   "build, then time (default on the npu backend: the host's cores minus "
                   "one per device, shared out over the devices; elsewhere 0). On the "
                   "simulator the virtual clock counts the builds. Each worker has B + 1 "
                   f"trials in flight, at most {WORKERS_PER_CPU} per usable CPU on the host")
    p.add_argument("--follow", action="store_true",
                   help="join a running operator study from another host: measure the shapes "
                   "its tuner allocates until it is done")
    p.add_argument("--stale-after", type=float, default=3600.0, metavar="SECONDS",
                   help="fail a RUNNING trial nothing watches once it is this old (a dead "
                   "follower on a journal file) and retry its config (default 3600)")
    p.add_argument("--no-progress", action="store_true", help="no line per chunk")
    p.add_argument("--dry-run", action="store_true",
                   help="print the study each operator would get and what measures it (on "
                   "the npu backend: each kernel's program, or why none); write nothing")
    return p


def main(argv: list[str]) -> int:
    """Bad input: one line, exit 2. What can be checked is checked before the storage is
    opened, so a refused run writes nothing and has nothing to remove; past the first
    measurement the measurements are kept whatever fails."""
    from aoe_optuna.cli.common import user_errors

    args = parser().parse_args(argv)
    state = {"measuring": False}
    try:
        return _run(args, state)
    except (*user_errors(), UsageError, ValueError) as exc:
        print(f"aoe-tune operators: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except Exception as exc:
        from aoe_optuna.study.storage.opening import describe_storage_error, storage_failure

        cause = storage_failure(exc)  # failed mid-run: locked, read-only, disk full
        if cause is None:
            raise
        print(f"aoe-tune operators: error: {describe_storage_error(args.storage, cause)}",
              file=sys.stderr)
        return 2


def _options(args: argparse.Namespace, parent_attrs: dict[str, Any],
             backend: type[BackendBase] | None = None) -> Any:
    """The tuner's options; ``backend``: the run's backend class (its default builders)."""
    from aoe_optuna.cli.common import (
        check_builders,
        check_positive,
        parse_sampler_kwargs,
        parse_workers,
    )
    from aoe_optuna.operators.scheduler import make_scheduler
    from aoe_optuna.operators.tuner import TunerOptions
    from aoe_optuna.study.run.pool_default import builders_for

    devices, n_workers = parse_workers(args.devices, args.n_workers)
    check_builders(args.builders, n_workers)
    budget = args.n_trials if args.n_trials is not None else parent_attrs.get(
        "budget", DEFAULT_BUDGET)
    check_positive(budget, "--n-trials", "number of measurements")
    kwargs = parse_sampler_kwargs(args.sampler_kwargs) or {}
    check_positive(args.stale_after, "--stale-after", "number of seconds")
    warm = args.warm_start if args.warm_start is not None else parent_attrs.get(
        "warm_start", True)
    name = args.scheduler or parent_attrs.get(SCHEDULER_ATTR, "gradient")
    return TunerOptions(budget=budget, scheduler=make_scheduler(name),
                        sampler=args.sampler or DEFAULT_SAMPLER, sampler_kwargs=kwargs,
                        seed=args.seed,
                        warm_start=bool(warm), n_workers=n_workers, devices=devices,
                        stale_after_s=args.stale_after,
                        builders=builders_for(backend, args.builders, n_workers)
                        if backend is not None else None)


def _run(args: argparse.Namespace, state: dict[str, bool]) -> int:
    import optuna

    from aoe_optuna.cli.common import check_kb_planned, load_spec_for
    from aoe_optuna.cli.final_writes import again_command, measurements_kept
    from aoe_optuna.export.destinations import check_knowledge_base, check_output_folder
    from aoe_optuna.export.kb import KnowledgeBase
    from aoe_optuna.operators import outcome
    from aoe_optuna.operators.layer_ops import check_backend
    from aoe_optuna.operators.parent_study import open_operator_run
    from aoe_optuna.operators.warm_start import kb_donors
    from aoe_optuna.spec.backend import make_backend
    from aoe_optuna.study.report.failed_run import all_failed
    from aoe_optuna.study.report.summary import absolute_storage_url
    from aoe_optuna.study.storage.redact import redact_url

    if args.config is None and args.study_name is None:
        raise UsageError("pass --config SPEC (new run) or --study-name NAME (resume)")
    if args.op_source is not None and args.export_dir is None:
        raise UsageError("--op-source: give --export-dir too (where each shape's "
                                 "kernel goes)")
    if args.op_source is not None and not Path(args.op_source).is_file():
        raise UsageError(f"--op-source: {args.op_source} is not a file")
    if args.export_dir is not None:
        check_output_folder(args.export_dir, "--export-dir")
    if args.kb is not None:
        check_knowledge_base(args.kb)  # a bad file fails before tuning
    kb = KnowledgeBase.load(args.kb) if args.kb else None
    spec = load_spec_for(args.config, args.num_devices) if args.config else None
    _options(args, {})  # the options' own checks, before the storage is touched
    if spec is not None:
        check_backend(spec.backend_kind, spec.workload)
    if args.dry_run:
        from aoe_optuna.operators.dry_plan import dry_plan

        if spec is None:
            raise UsageError("--dry-run: expected --config SPEC")
        for line in dry_plan(spec, args.study_name or
                             f"{spec.default_study_name()}-operators"):
            print(line)
        return 0

    def planned() -> list[dict]:  # the run's keys: none of them of another figure
        name = args.study_name or f"{spec.default_study_name()}-operators"
        return outcome.planned_kb_entries(spec, name)

    if spec is not None or args.kb_replace:
        check_kb_planned(args.kb, args.kb_replace, planned)
    if spec is not None and args.sampler is not None:
        _check_sampler(args, spec)
    # made before the storage is opened: a backend that cannot start (no toolkit, no
    # catlass checkout) is refused in one line with nothing written
    backend = make_backend(spec) if spec is not None else None
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    run = open_operator_run(args.storage, spec, args.study_name)
    spec, parent_name = run.spec, run.name
    if args.config is None:  # a resumed run: its spec is the stored one
        check_kb_planned(args.kb, args.kb_replace, planned)
    shown_storage = redact_url(args.storage)
    options = _options(args, run.stored, spec.backend_kind)
    say = (lambda line: None) if args.no_progress else _say
    if args.follow:
        if not run.started:
            raise UsageError(f"--follow: study {parent_name!r} has not started")
        state["measuring"] = True
        joined = run.follow(say, options.builders)
        say(f"{parent_name} is done; joined {joined} chunks")
        return 0
    # made before the run: the working folder may be deleted while it measures
    shown_absolute = absolute_storage_url(shown_storage)
    again = again_command(
        ["aoe-tune", "operators", "--storage", shown_absolute, "--study-name", parent_name,
         *(["--kb-replace"] if args.kb_replace else [])],
        {"--kb": args.kb, "--export-dir": args.export_dir, "--op-source": args.op_source})
    donors = []
    if kb is not None and options.warm_start:
        donors = kb_donors(kb.entries(), spec.profile.soc, spec.op_name)
    tuner = run.tuner(options, donors, say, backend=backend)
    for line in tuner.untimed:  # kinds the npu backend cannot time: the rest are tuned
        print(f"aoe-tune operators: {line}", file=sys.stderr)
    layer = f" + {len(tuner.layer_ops)} attention/vector" if tuner.layer_ops else ""
    say(f"operator study {parent_name} in {shown_storage}: {len(tuner.gemm_shapes)} GEMM "
        f"shapes{layer}, "
        f"budget {options.budget} measurements, scheduler {options.scheduler.name}, "
        f"warm start {'on' if options.warm_start else 'off'}"
        + (f", {options.builders} builder{'s' if options.builders != 1 else ''}"
           + (" (the npu default; --builders 0: none)" if args.builders is None else "")
           if options.builders else ""))
    state["measuring"] = True
    try:
        result = tuner.run()
    except KeyboardInterrupt:
        print(f"\naoe-tune operators: interrupted; measurements are stored. Resume with:\n"
              f"  aoe-tune operators --storage {shown_storage} --study-name {parent_name}",
              file=sys.stderr)
        return 130
    outcome.print_result(result)
    outcome.save_note(tuner.parent, result)
    failed = all_failed([t for s in tuner.studies for t in s.get_trials(deepcopy=False)])
    if failed is not None:  # no operator has a result: nothing to merge or export
        print(f"aoe-tune operators: error: nothing could be measured: {failed.line()}",
              file=sys.stderr)
        return NOTHING_MEASURED
    with measurements_kept(parent_name, shown_absolute, again):
        if args.kb:
            for line in outcome.merge_into_kb(result, spec, args.storage, args.kb,
                                              args.kb_replace):
                print(line)
        exports = None
        if args.export_dir:
            src = Path(args.op_source) if args.op_source else None
            exports = outcome.export_kernels(result, spec, args.storage,
                                            Path(args.export_dir), src)
            for line in exports.lines:
                print(line)
    if exports is not None:
        closing = exports.closing_line(len(result.shapes))
        if closing is not None:
            print(f"aoe-tune operators: {closing}", file=sys.stderr)
            return NOT_EXPORTED
    return 0


def _say(line: str) -> None:
    """A progress line; on a terminal broken between words at its width (the terminal
    would fold it mid-number), as the run summary is."""
    if not sys.stderr.isatty():
        print(line, file=sys.stderr, flush=True)
        return
    import shutil

    from aoe_optuna.study.report.text_fit import wrap_items

    width = shutil.get_terminal_size().columns
    for piece in wrap_items(line.split(" "), width, sep=" "):
        print(piece, file=sys.stderr, flush=True)


def _check_sampler(args: argparse.Namespace, spec: Any) -> None:
    """Build the sampler once on the spec's space, so a bad option or policy file is
    refused before the storage is touched rather than at the first shape."""
    from aoe_optuna.cli.common import parse_sampler_kwargs
    from aoe_optuna.study.session import SamplerChoice, build_sampler

    build_sampler(SamplerChoice(args.sampler, parse_sampler_kwargs(args.sampler_kwargs) or {},
                                args.seed), spec)
