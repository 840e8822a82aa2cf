"""``aoe-tune``: tune a kernel's tiling in an Optuna study, export the winner.

Every user error is one line on stderr and exit code 2, and nothing is
written: the spec, the sampler and its options, and the output paths are
checked before the storage is opened, so a refused run has nothing to remove
(and never removes a file another run may have opened).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from aoe_optuna.attrs import ROOFLINE_ATTR
from aoe_optuna.cli.common import WORKERS_PER_CPU, UsageError, add_kb_replace
from aoe_optuna.cli.common import user_errors as _user_errors

EXAMPLES = """\
examples:
  # tune the Qwen2.5-7B decode GEMMs on the simulator (SQLite study, resumable)
  aoe-tune --config studies/qwen25_7b_decode_910b2.json --n-trials 100
  # a study made by `optuna create-study --direction maximize` first
  aoe-tune --config studies/qwen25_7b_decode_910b2.json --storage sqlite:///aoe.db \\
      --study-name qwen-decode --n-trials 100 --sampler gp-ucb
  # resume it: storage and name are enough, the spec and sampler are stored in the study
  aoe-tune --storage sqlite:///aoe.db --study-name qwen-decode --n-trials 100
  # AOE's short form: tune, then write the tuned kernel (the npu backend's, as it builds it)
  aoe-tune --config studies/aoe_config.json --output optimized_kernel.cpp
  # export the best config of a study as kernel source + knowledge base
  aoe-tune export --storage sqlite:///aoe.db --study-name qwen-decode \\
      --output optimized_kernel.cpp
  # what a spec's space looks like (size, feasible configs, optimum on the simulator)
  aoe-tune describe studies/qwen25_7b_decode_910b2.json
  # is this machine ready for the npu backend (CANN, devices, catlass, msprof)?
  aoe-tune doctor

other commands: operators (one study per GEMM shape of a model, one shared budget),
kernel-set (K kernels per GEMM and the range of M each serves, for a serving mix),
export, describe, doctor, calibrate (a chip profile fitted to your own kernel timings),
recheck (re-time a knowledge base's entries measured under another toolkit or machine),
bench (sampler benchmark; its analyses of the
runs: bench compare, bench noise-floor, bench missed-optimum, bench diagnose),
pretrain-policy (REINFORCE transfer); `aoe-tune COMMAND --help` for each.

exit status:
  0    done (a line on stderr if every measurement of this run failed)
  2    bad input: one line on stderr, nothing written
  4    nothing could be measured: every measurement failed (the last line on stderr
       says how), so there is nothing to export
  130  interrupted; the measurements are stored, the same command resumes
"""

SUBCOMMANDS = ("tune", "export", "describe", "bench", "pretrain-policy", "operators",
               "kernel-set", "doctor", "calibrate", "recheck")
DEFAULT_STALE_AFTER_S = 3600.0
NOTHING_MEASURED = 4  # exit status: every measurement failed, the study holds no result
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader left


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def _tune_parser() -> argparse.ArgumentParser:
    from aoe_optuna.samplers.registry import DEFAULT_SAMPLER, sampler_names
    from aoe_optuna.study.storage.opening import DEFAULT_STORAGE

    p = _Parser(
        prog="aoe-tune",
        description="Tune a kernel's tiling, compile options and layout in an Optuna study.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", help="study spec (JSON with // comments, or TOML)")
    p.add_argument("--storage", default=DEFAULT_STORAGE,
                   help=f"Optuna storage URL or a journal file *.log (default {DEFAULT_STORAGE})")
    p.add_argument("--study-name", help="default: derived from the spec")
    p.add_argument("--n-trials", type=int, default=None,
                   help="measurements the study should hold in all (infeasible proposals are "
                   "not measured and do not count); default 100")
    p.add_argument("--sampler", default=None,
                   help=f"one of {', '.join(sampler_names())} (default: the one the study last "
                   f"ran with, {DEFAULT_SAMPLER} for a new study)")
    p.add_argument("--sampler-kwargs", default=None,
                   help="JSON object passed to the sampler (default: the stored ones when "
                   "--sampler is not given, else {})")
    p.add_argument("--prior", default=None, metavar="SOURCE",
                   help="what gp-ucb's model starts from, its weight learned from the "
                   "measurements: none, simulator (the SoC's simulator, calibrated per kernel "
                   "family as the study runs; the npu default), model (the backend's model of "
                   "its own kernel, scaled to the measurements; the cpu default), "
                   "study:NAME@URL (another study's trials, the same parameters), "
                   "recording:PATH (a Kernel Tuner "
                   "recording) or kb:PATH (a knowledge base's winners of the same op, "
                   "other shapes or SoCs); overrides the spec's prior")
    p.add_argument("--seed", type=int, default=None,
                   help="sampler seed (default: the stored one when resuming; a new study "
                   "draws one and records it, so the run can be repeated)")
    p.add_argument("--timeout", type=float, default=None,
                   help="time budget in seconds (default: the spec's max_search_time); virtual "
                   "measurement time unless --wall-time")
    p.add_argument("--wall-time", action="store_true",
                   help="count the time budget in wall-clock seconds")
    p.add_argument("--target", type=float, default=None,
                   help="stop once this many tokens/s is reached (default: target_throughput)")
    p.add_argument("--output", help="where to write the tuned kernel at the end: the npu "
                   "backend's own, as it builds it, or --op-source rewritten")
    p.add_argument("--op-source", help="a kernel source of your own whose tunable "
                   "declarations --output gets rewritten with the best config")
    p.add_argument("--kb", default=None,
                   help="knowledge base file to merge the best config into (checked before "
                   "the first measurement)")
    add_kb_replace(p)
    p.add_argument("--num-devices", type=int, default=None,
                   help="tensor-parallel degree the model is served with (AOE's --num-devices):"
                   " per-card shapes and the all-reduce in the step time; sets workload.tp")
    p.add_argument("--n-workers", type=int, default=None,
                   help="worker processes on this host, all on the one study (default 1, or "
                   "one per --devices entry)")
    p.add_argument("--devices", default=None,
                   help="comma-separated device ids, one worker each (sets "
                   "ASCEND_RT_VISIBLE_DEVICES per worker), e.g. 0,1,2,3")
    p.add_argument("--builders", type=int, default=None, metavar="B",
                   help="build ahead: B builder cores compile the configs the sampler "
                   "proposed next while each worker's device times one at a time (the cpu "
                   "backend's device is a core of its own); 0: build, then time, one config "
                   "at a time (default on the npu backend: the host's cores minus one per "
                   "device, shared out over the devices; elsewhere 0). Each worker has B + 1 "
                   f"trials in flight, at most {WORKERS_PER_CPU} per usable CPU on the host")
    p.add_argument("--stale-after", type=float, default=DEFAULT_STALE_AFTER_S, metavar="SECONDS",
                   help="fail a RUNNING trial that no heartbeat watches and no live process of "
                   "this host owns (optuna ask without tell, a host on a journal file) once it "
                   f"is this old, and retry its config (default {DEFAULT_STALE_AFTER_S:g})")
    p.add_argument("--no-progress", action="store_true", help="no live progress display")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _dispatch(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        # a reader that stopped early (`aoe-tune describe ... | head`) is not an error of
        # ours: quiet, and what is left unflushed goes nowhere instead of a traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _dispatch(argv: list[str]) -> int:
    _quiet_library_warnings()
    if argv and not argv[0].startswith("-") and argv[0] not in SUBCOMMANDS:
        # the tuning command takes options only: a first word that is none is a typo
        return _fail(f"unknown command {argv[0]!r}: expected one of "
                     f"{', '.join(SUBCOMMANDS)}, or the tuning command's options "
                     "(see aoe-tune --help)")
    command = argv[0] if argv and argv[0] in SUBCOMMANDS else "tune"
    if argv and argv[0] == command:
        argv = argv[1:]
    try:
        if command == "bench":
            from aoe_optuna.bench.command import main as bench_main

            return int(bench_main(argv) or 0)
        if command == "pretrain-policy":
            from aoe_optuna.samplers.reinforce.pretrain import main as pretrain_main

            return int(pretrain_main(argv) or 0)
        if command == "operators":
            from aoe_optuna.cli.operators import main as operators_main

            return operators_main(argv)
        if command == "kernel-set":
            from aoe_optuna.cli.kernel_set import main as kernel_set_main

            return kernel_set_main(argv)
        if command == "export":
            try:
                return _export_command(argv)
            except UsageError as exc:
                return _fail(str(exc), "aoe-tune export")
        if command == "describe":
            return _describe_command(argv)
        if command == "doctor":
            from aoe_optuna.cli.doctor import main as doctor_main

            return doctor_main(argv)
        if command == "calibrate":
            from aoe_optuna.cli.calibrate import main as calibrate_main

            return calibrate_main(argv)
        if command == "recheck":
            from aoe_optuna.cli.recheck import main as recheck_main

            return recheck_main(argv)
        return _tune_command(argv)
    except UsageError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("aoe-tune: interrupted", file=sys.stderr)
        return 130


def _quiet_library_warnings() -> None:
    """Optuna flags heartbeats and retries as experimental on every run; users need not care."""
    import warnings

    from optuna.exceptions import ExperimentalWarning

    warnings.filterwarnings("ignore", category=ExperimentalWarning)
    warnings.filterwarnings("ignore", message=".*torch.jit.script.*")


def _fail(message: str, prog: str = "aoe-tune") -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def _tune_command(argv: list[str]) -> int:
    args = _tune_parser().parse_args(argv)
    errors = _user_errors()
    try:
        return _tune(args)
    except errors as exc:
        return _fail(" ".join(str(exc).split()))
    except Exception as exc:
        return _storage_failed(args.storage, exc)


def _storage_failed(url: str, exc: Exception, prog: str = "aoe-tune") -> int:
    """One line for a storage that failed after it opened (locked, read-only, disk
    full, damaged pages); any other error is raised again."""
    from aoe_optuna.study.storage.opening import describe_storage_error, storage_failure

    cause = storage_failure(exc)
    if cause is None:
        raise exc
    return _fail(describe_storage_error(url, cause), prog)


def _with_prior(spec: Any, text: str) -> Any:
    """The spec with ``--prior``'s source in place of its own (stored with the spec)."""
    import dataclasses

    from aoe_optuna.spec.prior import prior_option

    if spec is None:
        raise UsageError("--prior: give --config SPEC too (the prior is part of a new "
                         "study's spec)")
    try:
        source = prior_option(text, spec.backend_kind)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if source is not None and source.kind in ("recording", "kb"):
        source = dataclasses.replace(source, path=str(Path(str(source.path)).resolve()))
    return dataclasses.replace(spec, prior=source,
                               prior_doc="none" if source is None else source.document())


def _tune(args: argparse.Namespace) -> int:
    import optuna

    from aoe_optuna.cli.common import (
        check_builders,
        check_kb_planned,
        check_positive,
        load_spec_for,
        parse_sampler_kwargs,
        parse_workers,
    )
    from aoe_optuna.cli.final_writes import again_command, measurements_kept
    from aoe_optuna.study.create import baseline_trial
    from aoe_optuna.study.report.progress import ProgressView
    from aoe_optuna.study.report.summary import (
        absolute_storage_url,
        print_summary,
        save_dashboard_note,
        summarise,
    )
    from aoe_optuna.study.report.text_fit import wrap_command, wrap_items
    from aoe_optuna.study.run.loop import Budget, StudyProgress
    from aoe_optuna.study.session import SamplerRequest, StudySession
    from aoe_optuna.study.storage.redact import redact_url

    check_positive(args.n_trials, "--n-trials", "number of measurements")
    check_positive(args.timeout, "--timeout", "number of seconds")
    check_positive(args.stale_after, "--stale-after", "number of seconds")
    check_positive(args.target, "--target", "number of tokens/s")
    devices, n_workers = parse_workers(args.devices, args.n_workers)
    check_builders(args.builders, n_workers)
    if args.op_source is not None and args.output is None:
        raise UsageError("--op-source: give --output too (the rewritten source to write)")
    if args.op_source is not None and not Path(args.op_source).is_file():
        raise UsageError(f"--op-source: {args.op_source} is not a file")
    _check_destinations(args)
    kwargs = parse_sampler_kwargs(args.sampler_kwargs)
    spec = load_spec_for(args.config, args.num_devices) if args.config else None
    if args.prior is not None:
        spec = _with_prior(spec, args.prior)
    if spec is not None and args.output is not None:
        _check_kernel_export(args, spec)
    from aoe_optuna.export.from_study import planned_entries

    def planned() -> list[dict[str, Any]]:
        return planned_entries(spec, args.study_name or spec.default_study_name())

    if spec is not None or args.kb_replace:
        check_kb_planned(args.kb, args.kb_replace, planned)
    from aoe_optuna.study.run.pool_default import builders_for

    # Optuna logs every failed trial with a traceback; the progress view says it in one line.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    session = StudySession.open(args.storage, spec, args.study_name,
                                SamplerRequest(args.sampler, kwargs, args.seed))
    study, spec = session.study, session.spec
    if args.config is None and args.output is not None:
        _check_kernel_export(args, spec)
    if args.config is None:
        check_kb_planned(args.kb, args.kb_replace, planned)
    builders = builders_for(spec.backend_kind, args.builders, n_workers)
    shown_storage = redact_url(args.storage)
    roofline = study.user_attrs.get(ROOFLINE_ATTR)
    budget = Budget(
        n_measurements=args.n_trials if args.n_trials is not None else 100,
        time_s=args.timeout if args.timeout is not None else spec.max_search_time,
        wall_time=args.wall_time,
        target_tokens_per_s=args.target if args.target is not None else spec.target_throughput,
        patience=spec.race.patience, patience_margin=spec.race.epsilon,
    )

    def baseline_value() -> float | None:
        t = baseline_trial(study, spec)
        return None if t is None else t.value

    # taken before the run: the working folder may be deleted while it measures
    folder, storage_url = Path.cwd(), absolute_storage_url(args.storage)
    shown_absolute = absolute_storage_url(shown_storage)
    again = again_command(
        ["aoe-tune", "export", "--storage", shown_absolute, "--study-name", study.study_name,
         *(["--kb-replace"] if args.kb_replace else [])],
        {"--kb": args.kb if args.kb is not None else "", "--output": args.output,
         "--op-source": args.op_source})
    before = study.get_trials(deepcopy=False)
    view = ProgressView(budget, baseline_value, roofline, enabled=not args.no_progress,
                        start=StudyProgress.of(before))
    choice = session.sampler_choice
    width = view.console.width
    header = [f"study {study.study_name}", f"in {shown_storage}:",
              f"{spec.space.size:,} configs,", f"{spec.space.n_feasible:,} feasible;",
              f"sampler {choice.name}" + (" (the study's own)," if choice.stored else ","),
              f"seed {choice.seed};", f"backend {spec.backend['name']}"
              + (f"; {n_workers} workers" if n_workers > 1 else "")
              + (f"; {builders} builder{'s' if builders != 1 else ''}" if builders else "")
              + (" (the npu default; --builders 0: none)"
                 if builders and args.builders is None else "")]
    # broken between whole items at the console's width (a terminal's, else $COLUMNS or
    # 80), as the run's summary is
    note = session.backend.noise_note()
    if note is not None:  # a recording's measurements: drawn from its repeats, or not
        header[-1] += ";"
        header.append(f"measurements: {note}")
    for line in wrap_items(header, width, sep=" "):
        print(line, file=sys.stderr)
    try:
        with view:
            result = session.run(budget, view, n_workers=n_workers, devices=devices,
                                 stale_after_s=args.stale_after, builders=builders,
                                 host_devices=n_workers)
        certified = session.certify(on_event=lambda line: print(line, file=sys.stderr),
                                    stale_after_s=args.stale_after)
    except KeyboardInterrupt:
        resume = (f"aoe-tune --storage {shown_absolute} "
                  f"--study-name {study.study_name}"
                  + (f" --n-trials {args.n_trials}" if args.n_trials else ""))
        print("\naoe-tune: interrupted; completed measurements (and the race's re-timings) "
              "are stored. Resume with:\n"
              + "\n".join(wrap_command(resume, width)), file=sys.stderr)
        return 130
    summary = summarise(study, spec, result, shown_absolute, folder, certified)
    print_summary(summary)
    save_dashboard_note(study, summary)
    from aoe_optuna.study.report.failed_run import all_failed
    from aoe_optuna.study.storage.artifacts import artifact_dir, upload_files, upload_spec

    failed = all_failed(study.get_trials(deepcopy=False), before, spec.baseline)
    nothing = failed is not None and not failed.study_has_result  # nothing to export
    with measurements_kept(study.study_name, shown_absolute, again):
        upload_spec(study, storage_url, spec.canonical())
        if (args.output is not None or args.kb is not None) and not nothing:
            source = Path(args.op_source) if args.op_source is not None else None
            output = Path(args.output) if args.output is not None else None
            _export_study(study, spec, args.storage, source, output, args.kb,
                          replace=args.kb_replace)
            kept = [*([output] if output else []), *([Path(args.kb)] if args.kb else [])]
            upload_files(study, storage_url, kept)
    if (where := artifact_dir(storage_url)) is not None:
        where = Path(where).resolve()  # paths that work from any folder
        print(f"artifacts: {where}, shown by")
        dashboard = f"optuna-dashboard {shown_absolute} --artifact-dir {where}"
        print("\n".join(wrap_command(dashboard, width)))
    if failed is not None:  # last, where a script's log ends
        if nothing:
            print(f"aoe-tune: error: nothing could be measured: {failed.line()}; nothing "
                  "to export", file=sys.stderr)
            return NOTHING_MEASURED
        print(f"aoe-tune: warning: {failed.line()}", file=sys.stderr)
    return 0


def _check_destinations(args: argparse.Namespace) -> None:
    """Outputs are written after the last measurement: check them before the first."""
    from aoe_optuna.export.destinations import check_knowledge_base, check_output_file

    if args.output is not None:
        check_output_file(args.output, "--output")
    if args.kb is not None:
        check_knowledge_base(args.kb)


def _check_kernel_export(args: argparse.Namespace, spec: Any) -> None:
    """Fail before tuning, not after, when the kernel cannot be written: a catlass study
    (its kernel is a catlass header: `aoe-tune export --catlass-header`), a study whose
    kernel is none (spec/export_target.py says why), or a source of the user's that lacks
    a tunable."""
    if args.op_source is not None:
        _check_op_source(Path(args.op_source), spec)
        return
    target = spec.export
    if target.kind == "kernel":
        return
    shown = ("a catlass header (aoe-tune export --catlass-header)" if target.kind == "catlass"
             else f"knowledge-base entries only: {target.why_no_kernel}")
    raise UsageError(f"--output: this study's kernel is not the npu backend's simple "
                     f"kernel; its export is {shown}")


def _check_op_source(path: Path, spec: Any) -> None:
    """The kernel source declares every tunable of the spec's space."""
    import numpy as np

    from aoe_optuna.export.kernel_source import rewrite_source

    config = spec.baseline or spec.space.config(
        spec.space.sample_feasible(1, np.random.default_rng(0))[0]
    )
    rewrite_source(path.read_text(encoding="utf-8", errors="replace"), config,
                   source_name=str(path))


# ------------------------------------------------------------------- export
def _export_parser() -> argparse.ArgumentParser:
    from aoe_optuna.study.storage.opening import DEFAULT_STORAGE

    p = _Parser(
        prog="aoe-tune export",
        description="Write the best config of a study into a kernel source and a knowledge base.",
        epilog="example:\n  aoe-tune export --storage sqlite:///aoe.db "
        "--study-name qwen-decode \\\n"
        "      --output optimized_kernel.cpp",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--storage", default=DEFAULT_STORAGE)
    p.add_argument("--study-name", required=True)
    p.add_argument("--output", help="tuned kernel source to write: the npu backend's own "
                   "kernel, as it builds it, or --op-source rewritten")
    p.add_argument("--op-source", help="a kernel source of your own whose tunable "
                   "declarations --output gets rewritten with the best config")
    p.add_argument("--kb", default="aoe_kb.json",
                   help="knowledge base JSON to merge into (default aoe_kb.json)")
    add_kb_replace(p)
    p.add_argument("--header", default=None, help="also write the knowledge base as a C header")
    p.add_argument("--catlass-header", default=None,
                   help="also write the best config as a catlass instantiation header")
    return p


def _export_command(argv: list[str]) -> int:
    args = _export_parser().parse_args(argv)
    if args.op_source is not None and args.output is None:
        raise UsageError("--op-source: give --output too (the rewritten source to write)")
    if args.kb_replace and not args.kb:
        raise UsageError("--kb-replace: give --kb too (the knowledge base whose entries it "
                         "replaces)")
    errors = _user_errors()
    try:
        from aoe_optuna.cli.common import check_storage_exists
        from aoe_optuna.cli.final_writes import again_command, measurements_kept
        from aoe_optuna.study.create import load_or_create
        from aoe_optuna.study.report.summary import absolute_storage_url
        from aoe_optuna.study.storage.opening import open_storage
        from aoe_optuna.study.storage.redact import redact_url

        check_storage_exists(args.storage, "--storage")
        from aoe_optuna.export.destinations import check_knowledge_base, check_output_file

        for option, path in (("--output", args.output), ("--header", args.header),
                             ("--catlass-header", args.catlass_header)):
            if path is not None:
                check_output_file(path, option)
        if args.kb:
            check_knowledge_base(args.kb)
        shown = absolute_storage_url(redact_url(args.storage))
        again = again_command(
            ["aoe-tune", "export", "--storage", shown, "--study-name", args.study_name,
             *(["--kb-replace"] if args.kb_replace else [])],
            {"--kb": args.kb, "--output": args.output, "--op-source": args.op_source,
             "--header": args.header, "--catlass-header": args.catlass_header})
        storage = open_storage(args.storage)
        _check_study_exists(storage, args.storage, args.study_name)
        with measurements_kept(args.study_name, shown, again):
            if _export_layer_op(args, storage):
                return 0
            study, spec = load_or_create(storage, args.study_name, None)
            src = Path(args.op_source) if args.op_source else None
            out = Path(args.output) if args.output else None
            catlass = Path(args.catlass_header) if args.catlass_header else None
            _export_study(study, spec, args.storage, src, out, args.kb, args.header, catlass,
                          replace=args.kb_replace)
    except errors as exc:
        return _fail(" ".join(str(exc).split()), "aoe-tune export")
    except Exception as exc:
        return _storage_failed(args.storage, exc, "aoe-tune export")
    return 0


def _check_study_exists(storage: Any, url: str, name: str) -> None:
    """Export reads a study; it never makes one, so it names the studies it could read."""
    import optuna

    from aoe_optuna.study.storage.redact import redact_url

    names = optuna.get_all_study_names(storage)
    if name not in names:
        listed = ", ".join(sorted(names)[:10]) + (", ..." if len(names) > 10 else "")
        raise UsageError(f"--study-name: no study {name!r} in {redact_url(url)} (studies "
                         f"there: {listed or 'none'}); `optuna studies --storage URL` lists "
                         "them")


def _export_layer_op(args: argparse.Namespace, storage: Any) -> bool:
    """Export an operator run's attention or vector kernel study, if it is one: its
    tiling into the knowledge base, and with --output its kernel source (catlass's
    flash-attention instantiation header, or the Ascend C vector kernel). False for any
    other study."""
    import optuna

    from aoe_optuna.operators.outcome import export_layer_study
    from aoe_optuna.operators.units import LAYER_OP_ATTR

    if args.study_name not in optuna.get_all_study_names(storage):
        return False
    study = optuna.load_study(study_name=args.study_name, storage=storage,
                              sampler=optuna.samplers.RandomSampler())
    if LAYER_OP_ATTR not in study.user_attrs:
        return False
    for option in ("op_source", "catlass_header"):
        if getattr(args, option) is not None:
            raise UsageError(f"--{option.replace('_', '-')}: study {args.study_name!r} tunes "
                             f"{study.user_attrs[LAYER_OP_ATTR]['kind']}, whose kernel "
                             "--output writes (the npu backend's own rendering)")
    for line in export_layer_study(study, args.storage, args.kb, args.header, args.output,
                                   replace=args.kb_replace):
        print(line)
    return True


def _export_study(
    study: Any, spec: Any, storage_url: str, source: Path | None, output: Path | None,
    kb_path: str | None, header: str | None = None, catlass_header: Path | None = None,
    replace: bool = False,
) -> None:
    from aoe_optuna.export.from_study import export_best

    for line in export_best(study, spec, storage_url, source, output, kb_path, header,
                            catlass_header, replace):
        print(line)


# ----------------------------------------------------------------- describe
def _describe_command(argv: list[str]) -> int:
    p = _Parser(
        prog="aoe-tune describe",
        description="Size, feasible count, baseline and (simulator) exhaustive optimum of specs.",
        epilog="examples:\n  aoe-tune describe studies/qwen25_7b_decode_910b2.json "
        "studies/gemm_4096_910b2.toml\n"
        "  # the Qwen2.5-7B studies; the optimum of a space of millions of configs takes "
        "minutes\n  aoe-tune describe studies/qwen25_7b_*.json --no-optimum",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("specs", nargs="+", help="study spec files")
    p.add_argument("--no-optimum", action="store_true",
                   help="skip the exhaustive optimum (it enumerates the feasible set)")
    args = p.parse_args(argv)
    errors = _user_errors()
    try:
        from aoe_optuna.cli.describe import describe_spec

        for path in args.specs:
            for line in describe_spec(path, optimum=not args.no_optimum):
                print(line)
    except errors as exc:
        return _fail(" ".join(str(exc).split()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
