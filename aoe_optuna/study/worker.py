"""A worker process of a study: ``python -m aoe_optuna.study.worker``.

Started by :func:`aoe_optuna.study.run.worker_pool.run_workers` with the study's name,
its sampler and budget on the command line and the storage URL in the
environment (``AOE_WORKER_STORAGE``). It opens the study like every other run
(:class:`aoe_optuna.study.session.StudySession`) and measures until the study's
budget is spent. Exit codes: 0 done, 2 the study cannot be opened (one line on
stderr), 130 interrupted.

:func:`serve` is the part every worker shares (the command line, the storage
from the environment, the exit codes); a study that is not a spec's (an
operator run's attention or vector kernel study) has a worker module of its own
that calls it with its own way to open and run the study.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aoe_optuna.study.run.loop import Budget
    from aoe_optuna.study.session import SamplerRequest

EXIT_DONE, EXIT_REFUSED, EXIT_INTERRUPTED = 0, 2, 130


@dataclass(frozen=True)
class WorkerTask:
    """What one worker was started to do, as its command line says."""

    storage_url: str
    study_name: str
    index: int
    sampler: SamplerRequest
    budget: Budget
    stale_after_s: float | None
    max_idle: int | None
    builders: int | None = None
    host_devices: int = 1


def main(argv: Sequence[str] | None = None) -> int:
    return serve(argv, _run_session, "aoe_optuna.study.worker")


def _run_session(task: WorkerTask) -> None:
    from aoe_optuna.study.session import StudySession

    session = StudySession.open(task.storage_url, study_name=task.study_name,
                                sampler=task.sampler, worker_index=task.index)
    session.run(task.budget, stale_after_s=task.stale_after_s, max_idle=task.max_idle,
                builders=task.builders, host_devices=task.host_devices)


def serve(argv: Sequence[str] | None, run: Callable[[WorkerTask], None], prog: str) -> int:
    """Parse a worker's command line and ``run`` it; a study that cannot be opened is one
    line and exit 2, Ctrl-C exit 130."""
    import warnings

    import optuna
    from optuna.exceptions import ExperimentalWarning

    from aoe_optuna.spec.format import SpecError
    from aoe_optuna.study.create import StudyError
    from aoe_optuna.study.run.loop import Budget
    from aoe_optuna.study.run.worker_pool import STORAGE_ENV
    from aoe_optuna.study.session import SamplerRequest, SessionError
    from aoe_optuna.study.storage.opening import (
        StorageError,
        describe_storage_error,
        storage_failure,
    )

    warnings.filterwarnings("ignore", category=ExperimentalWarning)
    p = argparse.ArgumentParser(prog=prog,
                                description="One worker of a study (started by aoe-tune).")
    p.add_argument("--study-name", required=True)
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--sampler", required=True, help="JSON: name, kwargs, seed")
    p.add_argument("--budget", required=True, help="JSON: the fields of Budget")
    p.add_argument("--stale-after", type=float, default=None)
    p.add_argument("--max-idle", type=int, default=None)
    p.add_argument("--builders", type=int, default=None)
    p.add_argument("--host-devices", type=int, default=1)
    args = p.parse_args(argv)
    storage_url = os.environ.get(STORAGE_ENV)
    if not storage_url:
        print(f"aoe-tune worker: error: {STORAGE_ENV} is not set", file=sys.stderr)
        return EXIT_REFUSED
    sampler = json.loads(args.sampler)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    task = WorkerTask(storage_url, args.study_name, args.index,
                      SamplerRequest(sampler["name"], sampler["kwargs"], sampler["seed"]),
                      Budget(**json.loads(args.budget)), args.stale_after, args.max_idle,
                      args.builders, args.host_devices)
    try:
        run(task)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except (SessionError, StudyError, StorageError, SpecError) as exc:
        return _refuse(" ".join(str(exc).split()))
    except Exception as exc:
        cause = storage_failure(exc)
        if cause is None:
            raise
        return _refuse(describe_storage_error(storage_url, cause))
    return EXIT_DONE


def _refuse(line: str) -> int:
    print(f"aoe-tune worker: error: {line}", file=sys.stderr)
    return EXIT_REFUSED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
