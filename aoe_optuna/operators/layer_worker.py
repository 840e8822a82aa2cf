"""A worker process of an attention or vector kernel study of an operator run:
``python -m aoe_optuna.operators.layer_worker``.

The same worker as a GEMM shape's (:mod:`aoe_optuna.study.worker`: command line,
storage in the environment, exit codes, budget guard, claims, recovery of dead
trials), on a study that holds a kernel's plan instead of a spec: it opens the
study by name (:meth:`aoe_optuna.operators.units.LayerUnit.join`) and measures
with the simulator's model until the study's budget is spent.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from aoe_optuna.study.worker import WorkerTask, serve


def main(argv: Sequence[str] | None = None) -> int:
    return serve(argv, _run, "aoe_optuna.operators.layer_worker")


def _run(task: WorkerTask) -> None:
    from aoe_optuna.operators.units import LayerUnit
    from aoe_optuna.study.storage.opening import open_storage

    unit = LayerUnit.join(open_storage(task.storage_url), task.storage_url, task.study_name,
                          task.sampler, task.index)
    unit.run(task.budget, stale_after_s=task.stale_after_s, max_idle=task.max_idle,
             builders=task.builders, host_devices=task.host_devices)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
