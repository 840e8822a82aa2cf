"""``aoe-tune calibrate``: a chip profile fitted to the chip's own measured kernels.

Checks ``--out`` and ``--soc`` first, then reads measured kernel timings (plain
CSV/JSON rows of GEMMs and of attention and vector kernels, an msprof op_summary,
or an npu study's own measurements) a row at a time into distinct kernels
(aoe_optuna.calibration.kernels: a kernel timed more than once is one figure, and
the row and shape caps stop the read where they are passed), simulates each
kernel with the base profile, fits each kernel family's efficiency scale and
launch overhead from that family's kernels alone (aoe_optuna.calibration.chip_fit),
prints each family's in-sample, leave-one-out and shipped-profile errors, and
writes the base profile with the fitted ``calibration`` section: a file a spec's
``hardware.soc`` names by its path. A family with fewer than three distinct
kernels is bad input: one line naming it, exit 2, nothing written (``--family``
fits the others alone). A family is refused in one line and keeps the shipped model
where the shipped model's mean error on its kernels is inside what their scatter
allows about zero, or where its leave-one-out band is no narrower than the shipped
profile's (chip_fit.refusal); when every
family is refused, that is the command's one line on stderr, exit 2, nothing
written. Every bad input is one line on stderr, exit 2, nothing written (a
missing study storage is not created).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn

from aoe_optuna.cli.common import UsageError

EXAMPLES = """\
examples:
  # torch_npu's published square GEMMs (library kernels: no tiling) as your own timings:
  # refused, exit 2, nothing written (the shipped model is -5.3% off them on average,
  # inside their scatter); a chip whose kernels ran 1.4x these times would be written
  aoe-tune calibrate --soc Ascend910B2 --timings studies/timings/torch_npu_910b2.csv \\
      --out my910b2.json
  # several files read together, rows with a tiling simulated with it; the guide's two
  # pingpong kernels are too few for a fit of their own, so fit the library kernel only
  # (refused as above on these files)
  aoe-tune calibrate --soc Ascend910B2 --timings studies/timings/torch_npu_910b2.csv \\
      --timings studies/timings/catlass_guide_910b2.csv --family gemm_library \\
      --out my910b2.json

Rows: op (gemm), shape MxNxK, dtype, tiling (name=value;... or empty), time_us, as
CSV with a header or a JSON list (studies/timings/catlass_ex52_910b3.json; refused
as it stands, since the shipped constants were fitted to those very kernels); or an
attention or vector kernel: op prefill_attention, decode_attention, rmsnorm,
swiglu, ... with its problem as shape (batch=1;q_heads=28;kv_heads=4;head_dim=128;
seq_len=4096, or rows=4096;width=3584) and an empty tiling. Each kernel family (a
GEMM template and dispatch policy: pingpong, preload, padding, split-K; the library
kernel; each attention and vector kernel) is fitted from its own rows and needs at
least three distinct kernels (--family NAME, repeated, fits only those families
and skips the rows of the others). The written file is a profile: put its path in a
spec's hardware.soc. An npu study's own measurements: --from-study STORAGE_URL
STUDY_NAME (the SoC is the study's); an msprof profile of a model run: --msprof
op_summary_*.csv (its MatMul, attention and vector kernels).

A kernel timed more than once (the same op, shape, dtype and tiling, in one input
or several) is one kernel at the median of its timings; the leave-one-out leaves
out a whole kernel. At most {rows:,} rows from all inputs together and {shapes:,}
distinct shapes; a long read or simulation says how far it got on stderr.
"""
OUT_DEFAULT = "calibrated_profile.json"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def _examples() -> str:
    from aoe_optuna.calibration.input_caps import MAX_ROWS, MAX_SHAPES

    return EXAMPLES.format(rows=MAX_ROWS, shapes=MAX_SHAPES)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="aoe-tune calibrate",
                description="Fit a chip profile (per kernel family, an efficiency scale and "
                "a launch overhead on the simulator's model) to measured kernel timings; "
                "print each family's in-sample and leave-one-out error; keep the shipped "
                "constants for a family whose kernels show no offset beyond their scatter or "
                "whose held-out kernels a fit predicts no better.",
                epilog=_examples(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--soc", default=None, help="the base profile: a shipped SoC such as "
                   "Ascend910B2, or a profile file (default with --from-study: the study's)")
    p.add_argument("--timings", action="append", default=[], metavar="FILE",
                   help="CSV or JSON rows of op, shape (MxNxK), dtype, tiling (optional), "
                   "time_us; repeat for more files")
    p.add_argument("--msprof", action="append", default=[], metavar="CSV",
                   help="an msprof op_summary CSV: its MatMul shapes (mean durations) and "
                   "its attention and vector kernels")
    p.add_argument("--from-study", nargs=2, metavar=("STORAGE", "NAME"), default=None,
                   help="an npu study's own measured GEMMs")
    p.add_argument("--family", action="append", default=[], metavar="NAME",
                   help="fit only this kernel family (gemm_library, gemm_pingpong, "
                   "gemm_preload, gemm_padding, gemm_split_k, rmsnorm, ...); repeat for "
                   "more; the rows of the others are skipped (default: every family)")
    p.add_argument("--out", default=OUT_DEFAULT,
                   help=f"the calibrated profile to write (default {OUT_DEFAULT})")
    return p


def main(argv: Sequence[str]) -> int:
    from aoe_optuna.cli.common import user_errors
    from aoe_optuna.workload.files import WorkloadFileError

    errors = (*user_errors(), WorkloadFileError, ValueError)
    try:
        args = parser().parse_args(list(argv))
        return _calibrate(args, list(argv))
    except errors as exc:
        print(f"aoe-tune calibrate: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def _calibrate(args: argparse.Namespace, argv: list[str]) -> int:
    from aoe_optuna.calibration.calibrated_profile import calibrated_text
    from aoe_optuna.calibration.chip_fit import MIN_KERNELS, chip_calibration, fit_families
    from aoe_optuna.calibration.kernels import KernelTable
    from aoe_optuna.calibration.model_times import model_us
    from aoe_optuna.calibration.timings import read_timings
    from aoe_optuna.export.destinations import check_output_file

    if not (args.timings or args.msprof or args.from_study):
        raise UsageError("expected --timings, --msprof or --from-study (see aoe-tune "
                         "calibrate --help)")
    check_output_file(args.out, "--out")  # before anything is read or fitted
    wanted = _families(args.family)
    profile = _base_profile(args.soc) if args.soc is not None else None
    table = KernelTable()
    if args.from_study:
        study_soc = _study_soc_and_rows(*args.from_study, table)
        profile = profile or _base_profile(study_soc, "--from-study")
    if profile is None:
        raise UsageError("--soc: expected the base profile (a SoC such as Ascend910B2, or a "
                         "profile file)")
    for path in args.timings:
        table.add_all(read_timings(path, table.__len__))
    for path in args.msprof:
        _add_msprof(path, table)
    kernels = [k for k in table.kernels if not wanted or k.family in wanted]
    _check_wanted(kernels, wanted)
    if len(kernels) < MIN_KERNELS:
        raise UsageError(f"timings: expected at least {MIN_KERNELS} distinct kernels "
                         f"(leave-one-out needs them), got {len(kernels)} from {table.rows} "
                         "rows (a kernel timed more than once counts once)")
    _check_family_sizes(kernels)
    import numpy as np

    model = model_us(kernels, profile)
    measured = np.array([k.figure_us for k in kernels])
    outcomes = fit_families(np.array([k.family for k in kernels]), model, measured)
    skipped = len(table.kernels) - len(kernels)
    print(f"{table.rows:,} rows, {len(kernels):,} distinct kernels on {profile.soc}, "
          f"{len(outcomes)} kernel famil{'ies' if len(outcomes) != 1 else 'y'}"
          + (f" ({skipped:,} kernels of other families skipped)" if skipped else ""))
    for o in outcomes:
        if o.fit is None:
            print(f"  {o.family:<20} {o.refused}")
            continue
        print(f"  {o.family:<20} {o.kernels} kernels: scale {o.fit.scale:.4f}, launch "
              f"overhead {o.fit.launch_us:+.2f} us"
              + ("" if o.written else f"; {o.refused}"))
        print(f"    in sample       {o.fit.in_sample.text()}")
        loo, shipped = o.fit.observed
        print(f"    leave-one-out   {o.fit.leave_one_out.text()} (these kernels' median "
              f"{loo:.1%})")
        print(f"    shipped profile {o.fit.shipped.text()} (these kernels' median "
              f"{shipped:.1%})")
        print(f"    stated          {o.fit.stated(o.written).text()}"
              + ("" if o.written else " (the shipped model, no narrower than its "
                 "leave-one-out)"))
    if not any(o.written for o in outcomes):
        raise UsageError("calibration refused: " + "; ".join(
            str(o.refused).removeprefix(f"family {o.family} refused: ") + f" ({o.family})"
            for o in outcomes) + "; nothing written")
    report = {"rows": table.rows, "kernels": len(kernels), "inputs": _inputs(args),
              "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "command": "aoe-tune calibrate " + shlex.join(_redacted(argv))}
    _write(args.out, calibrated_text(profile, chip_calibration(profile.soc, outcomes, report)))
    written = [o.family for o in outcomes if o.written]
    kept = [o.family for o in outcomes if not o.written and o.fit is not None]
    print(f"wrote {args.out} ({', '.join(written)}"
          + (f"; the shipped constants and their stated band for {', '.join(kept)}"
             if kept else "") + "): name it as the spec's hardware.soc")
    return 0


def _families(names: list[str]) -> set[str]:
    """The families ``--family`` names, checked (none: every family)."""
    from aoe_optuna.calibration.families import FAMILIES

    for name in names:
        if name not in FAMILIES:
            raise UsageError(f"--family: expected one of {', '.join(FAMILIES)}, got {name!r}")
    return set(names)


def _check_wanted(kernels: Sequence[Any], wanted: set[str]) -> None:
    """A family ``--family`` names must have rows in the inputs."""
    missing = sorted(wanted - {k.family for k in kernels})
    if missing:
        raise UsageError(f"--family {missing[0]}: expected rows of that family in the "
                         "inputs, got none")


def _check_family_sizes(kernels: Sequence[Any]) -> None:
    """A family with too few distinct kernels to fit and hold out is bad input: the first
    such family, in one line, before anything is simulated."""
    from collections import Counter

    from aoe_optuna.calibration.chip_fit import MIN_KERNELS
    from aoe_optuna.calibration.families import FAMILIES

    counts = Counter(k.family for k in kernels)
    small = [f for f in FAMILIES if 0 < counts[f] < MIN_KERNELS]
    if small:
        family, n = small[0], counts[small[0]]
        others = [f for f in FAMILIES if counts[f] >= MIN_KERNELS]
        hint = (f"; or fit the others alone: {' '.join(f'--family {f}' for f in others)}"
                if others else "")
        raise UsageError(f"family {family}: expected at least {MIN_KERNELS} distinct kernels "
                         f"(a family's fit and its leave-one-out need them), got {n}; time "
                         f"more of its kernels{hint}")


def _add_msprof(path: str, table: Any) -> None:
    """An op_summary's MatMul shapes and its attention and vector kernels; a profile with
    neither is refused in one line."""
    from aoe_optuna.calibration.msprof_layer_ops import LAYER_OP_TYPES, read_msprof_layer_rows
    from aoe_optuna.calibration.timings import read_msprof_timings
    from aoe_optuna.workload.files import WorkloadFileError
    from aoe_optuna.workload.msprof import OP_TYPE

    before = table.rows
    table.add_all(read_msprof_layer_rows(path))
    layer_rows = table.rows - before
    try:
        table.add_all(read_msprof_timings(path))
    except WorkloadFileError as exc:
        if not (layer_rows and exc.where == f"column '{OP_TYPE}'"):
            if exc.where == f"column '{OP_TYPE}'":
                raise WorkloadFileError(exc.source, exc.where, "at least one MatMul, "
                                        f"attention or vector operator "
                                        f"({', '.join(sorted(LAYER_OP_TYPES)[:4])}, ...)",
                                        exc.got) from None
            raise


def _base_profile(soc: str, option: str = "--soc") -> Any:
    """The base profile (not calibrated already); its errors name ``option``."""
    from aoe_optuna.hardware.profile import ProfileError, load_profile

    try:
        profile = load_profile(soc)
    except ProfileError as exc:
        raise UsageError(f"{option}: {exc}") from None
    if profile.calibration is not None:
        raise UsageError(f"{option}: {soc} is a calibrated profile already; calibrate from its "
                         f"base, {profile.calibration.base}")
    return profile


def _write(out: str, text: str) -> None:
    """The profile, written atomically; a write that fails although ``--out`` was
    checked (the folder removed meanwhile, a full disk) is one line."""
    from aoe_optuna.atomic_write import write_atomic, write_error_text

    try:
        write_atomic(out, text)
    except OSError as exc:
        raise UsageError(f"--out: {write_error_text(exc)}; nothing written") from None


def _redacted(argv: list[str]) -> list[str]:
    """``argv`` with every storage URL's password hidden (the profile records it)."""
    from aoe_optuna.study.storage.redact import redact_url

    return [redact_url(a) if "://" in a else a for a in argv]


def _inputs(args: argparse.Namespace) -> list[str]:
    found = [*args.timings, *args.msprof]
    if args.from_study:
        from aoe_optuna.study.storage.redact import redact_url

        found.append(f"{redact_url(args.from_study[0])} {args.from_study[1]}")
    return found


def _study_soc_and_rows(url: str, name: str, table: Any) -> str:
    """The npu study's SoC; its measured configs' per-GEMM times go into ``table``. The
    storage is only read: a SQLite or Journal file that is not there is refused, not
    created."""
    import optuna

    from aoe_optuna.attrs import ATTR_LATENCY_US
    from aoe_optuna.calibration.timings import TimedKernel
    from aoe_optuna.cli.common import check_storage_exists
    from aoe_optuna.spec.stored import stored_spec
    from aoe_optuna.study.run.objective import is_measured
    from aoe_optuna.study.storage.opening import open_storage
    from aoe_optuna.study.storage.redact import redact_url

    check_storage_exists(url, "--from-study")
    storage = open_storage(url)
    if name not in optuna.get_all_study_names(storage):
        raise UsageError(f"--from-study: no study {name!r} in {redact_url(url)}")
    study = optuna.load_study(study_name=name, storage=storage,
                              sampler=optuna.samplers.RandomSampler())
    spec = stored_spec(study)
    if spec is None:
        raise UsageError(f"--from-study: study {name!r} was not made by aoe-tune (no spec)")
    if not spec.backend_kind.times_soc():
        raise UsageError(f"--from-study: study {name!r} ran on the {spec.backend['name']} "
                         "backend: expected an npu study (measured on the chip, not modelled)")
    gemms = {g.name: g for g in spec.workload.gemms}
    before = table.rows
    for trial in study.get_trials(deepcopy=False):
        if not is_measured(trial):
            continue
        tiling = spec.space.full_config(trial.params)
        for gemm_name, us in (trial.user_attrs.get(ATTR_LATENCY_US) or {}).items():
            if gemm_name in gemms and isinstance(us, (int, float)) and 0 < us < float("inf"):
                table.add(TimedKernel(f"study {name}: trial {trial.number} {gemm_name}",
                                      gemms[gemm_name], dict(tiling), float(us)))
    if table.rows == before:
        raise UsageError(f"--from-study: study {name!r} holds no measured GEMM time")
    return str(spec.hardware_doc.get("soc") if spec.hardware_doc else spec.profile.soc)
