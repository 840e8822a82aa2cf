"""What every ``aoe-tune`` command shares: which errors are the user's, storage files,
and the checks of the options several commands take."""

from __future__ import annotations

import json
import os
from typing import Any

WORKERS_PER_CPU = 8


class UsageError(ValueError):
    """Bad command-line input: printed as one line, exit code 2."""


def parse_sampler_kwargs(text: str | None) -> dict[str, Any] | None:
    """``--sampler-kwargs``: a JSON object (None when the option is not given)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--sampler-kwargs: expected a JSON object ({exc.msg})") from None
    if not isinstance(value, dict):
        raise UsageError("--sampler-kwargs: expected a JSON object such as '{\"beta\": 3.84}'")
    return value


def parse_workers(devices_text: str | None, n_workers: int | None) -> tuple[list[str], int]:
    """``--devices`` and ``--n-workers``: the device ids and the worker count (one worker
    per device unless --n-workers says otherwise), at most :func:`max_workers`."""
    devices: list[str] = []
    if devices_text is not None:
        devices = [d.strip() for d in devices_text.split(",")]
        if not all(d.isdigit() for d in devices) or len(set(devices)) != len(devices):
            raise UsageError(f"--devices: expected distinct device ids such as 0,1,2,3, "
                             f"got {devices_text!r}")
    count = n_workers if n_workers is not None else max(len(devices), 1)
    if count < 1:
        raise UsageError("--n-workers: expected a positive number of worker processes")
    if devices and len(devices) != count:
        raise UsageError(f"--devices names {len(devices)} devices for {count} workers")
    cap, cpus = max_workers(), usable_cpus()
    if count > cap:
        option = "--devices" if devices else "--n-workers"
        raise UsageError(f"{option}: expected at most {cap} worker processes on this host "
                         f"({WORKERS_PER_CPU} per CPU, {cpus} CPUs), got {count}")
    return devices, count


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which taskset and containers set),
    else all of the host's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def max_workers() -> int:
    """The most worker processes one host starts: :data:`WORKERS_PER_CPU` per usable CPU.

    Each worker is a whole Python process (Optuna, numpy, its sampler: a GP-UCB worker
    holds about 300 MB after a dozen measurements) that proposes on the CPU between
    measurements, and on the simulator or the cpu backend measures there too. Workers
    that wait on an NPU, a kernel build or a remote storage leave the CPU to others, so
    a few per CPU still pay: 16 on a 2-core host ran the PostgreSQL load test without
    an error. Thousands only queue for the CPU, the storage's connections and memory
    (--n-workers 5000: load 136, nothing measured in 60 s), so they are refused before
    any starts.
    """
    return WORKERS_PER_CPU * usable_cpus()


def check_builders(builders: int | None, n_workers: int) -> None:
    """``--builders``: 0 (no build pool) or at most :func:`max_builders` per worker."""
    if builders is None:
        return
    if builders < 0:
        raise UsageError("--builders: expected 0 (no build pool) or a positive number of "
                         "builder cores")
    cap = max_builders(n_workers)
    if builders > cap:
        workers = f"{n_workers} worker{'s' if n_workers != 1 else ''}"
        raise UsageError(f"--builders: expected at most {cap} per worker on this host (each "
                         f"worker has its builders + 1 trials in flight; {workers}, at most "
                         f"{WORKERS_PER_CPU} trials in flight per CPU, {usable_cpus()} "
                         f"CPUs), got {builders}")


def max_builders(n_workers: int) -> int:
    """The most builders each of ``n_workers`` workers may have: their trials in flight,
    ``n_workers x (builders + 1)``, within :func:`max_workers`.

    Each trial in flight is a thread of its worker that proposes on the CPU, and on the
    cpu and npu backends a compiler process; a modelled build (the simulator) costs no
    core, but its trial is as real. Past a few per CPU they only queue for the CPU, the
    sampler and the storage: ``aoe-tune operators --builders 10000`` made 197 trials and
    measured nothing in 120 s. The same share as worker processes, so that one host's
    cap holds however its trials are split into workers and builders.
    """
    return max(max_workers() // max(n_workers, 1) - 1, 0)


def check_positive(value: float | None, option: str, what: str) -> None:
    """``option`` must be a positive ``what`` when given."""
    if value is not None and not value > 0:
        raise UsageError(f"{option}: expected a positive {what}")


class NumDevicesError(ValueError):
    """``--num-devices`` that cannot apply to the spec's workload."""


def user_errors() -> tuple[type[BaseException], ...]:
    from aoe_optuna.cli.final_writes import FinalWriteError
    from aoe_optuna.export.destinations import DestinationError
    from aoe_optuna.export.kb_entry import KBError
    from aoe_optuna.export.kernel_source import ExportError
    from aoe_optuna.hardware.profile import ProfileError
    from aoe_optuna.samplers.registry import UnknownSamplerError
    from aoe_optuna.space.params import ParamError
    from aoe_optuna.spec.loader import SpecError
    from aoe_optuna.study.create import StudyError
    from aoe_optuna.study.session import SessionError
    from aoe_optuna.study.storage.opening import StorageError

    return (SpecError, ProfileError, ParamError, StorageError, StudyError,
            UnknownSamplerError, ExportError, NumDevicesError, DestinationError, KBError,
            SessionError, UsageError, FinalWriteError)


def check_storage_exists(url: str, option: str) -> None:
    """A storage a command only reads (``export``, ``calibrate --from-study``) must be
    there: opening a SQLite or Journal file that is not creates it (an empty 112 KB
    database, an empty Journal file), so a missing one is refused in one line first."""
    from aoe_optuna.study.storage.file_kind import is_missing, storage_file
    from aoe_optuna.study.storage.redact import redact_url

    if (local := storage_file(url)) is not None and is_missing(local):
        raise UsageError(f"{option}: {redact_url(url)} does not exist")


def load_spec_for(path: str, num_devices: int | None) -> Any:
    """The spec of ``path``, with the workload's ``tp`` set to ``num_devices`` if given."""
    from aoe_optuna.spec.format import read_document
    from aoe_optuna.spec.loader import load_spec, spec_from_dict

    if num_devices is None:
        return load_spec(path)
    if num_devices < 1:
        raise NumDevicesError("--num-devices: expected a positive number of devices")
    doc = read_document(path)
    workload = doc.get("workload") or {}
    per_card = [k for k in ("gemm", "shapes", "msprof") if isinstance(workload, dict)
                and k in workload]
    if not isinstance(workload, dict) or per_card:
        what = per_card[0] if per_card else "workload"
        raise NumDevicesError(
            f"--num-devices: {path}: a '{what}' workload gives per-card shapes already; "
            "--num-devices splits a model (model or hf_config) over devices")
    doc["workload"] = {**workload, "tp": num_devices}
    return spec_from_dict(doc, source=str(path))


def add_kb_replace(parser: Any) -> None:
    """``--kb-replace``, the same on every command that merges into a knowledge base."""
    parser.add_argument(
        "--kb-replace", action="store_true",
        help="replace a knowledge base entry whose value is another figure (a step's "
        "tokens/s and a GEMM shape's own TFLOPS, or steps of two workloads) instead of "
        "refusing the merge; entries of one figure keep the higher value either way")


def check_kb_planned(kb: str | None, replace: bool, planned: Any) -> None:
    """Before the first measurement: the knowledge base holds no entry of another figure
    under a key the run will write (``planned``: a callable giving those entries, called
    only when there is something to check). ``--kb-replace`` needs ``--kb``."""
    if replace and not kb:
        raise UsageError("--kb-replace: give --kb too (the knowledge base whose entries "
                         "it replaces)")
    if not kb or replace:
        return
    from aoe_optuna.export.destinations import check_knowledge_base

    check_knowledge_base(kb, planned=planned())
