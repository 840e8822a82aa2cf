"""A worker process of a study: ``python -m aoe_optuna.study.worker``.

Started by :func:`aoe_optuna.study.workers.run_workers` with the study's name,
its sampler and budget on the command line and the storage URL in the
environment (``AOE_WORKER_STORAGE``). It opens the study like every other run
(:class:`aoe_optuna.study.session.StudySession`) and measures until the study's
budget is spent. Exit codes: 0 done, 2 the study cannot be opened (one line on
stderr), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

EXIT_DONE, EXIT_REFUSED, EXIT_INTERRUPTED = 0, 2, 130


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    import optuna
    from optuna.exceptions import ExperimentalWarning

    from aoe_optuna.spec.format import SpecError
    from aoe_optuna.study.create import StudyError
    from aoe_optuna.study.runner import Budget
    from aoe_optuna.study.session import SamplerRequest, SessionError, StudySession
    from aoe_optuna.study.storage import StorageError, describe_storage_error, storage_failure
    from aoe_optuna.study.workers import STORAGE_ENV

    warnings.filterwarnings("ignore", category=ExperimentalWarning)
    p = argparse.ArgumentParser(prog="aoe_optuna.study.worker",
                                description="One worker of a study (started by aoe-tune).")
    p.add_argument("--study-name", required=True)
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--sampler", required=True, help="JSON: name, kwargs, seed")
    p.add_argument("--budget", required=True, help="JSON: the fields of Budget")
    p.add_argument("--stale-after", type=float, default=None)
    args = p.parse_args(argv)
    storage_url = os.environ.get(STORAGE_ENV)
    if not storage_url:
        print(f"aoe-tune worker: error: {STORAGE_ENV} is not set", file=sys.stderr)
        return EXIT_REFUSED
    sampler = json.loads(args.sampler)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        session = StudySession.open(
            storage_url, study_name=args.study_name,
            sampler=SamplerRequest(sampler["name"], sampler["kwargs"], sampler["seed"]),
            worker_index=args.index)
        session.run(Budget(**json.loads(args.budget)), stale_after_s=args.stale_after)
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
