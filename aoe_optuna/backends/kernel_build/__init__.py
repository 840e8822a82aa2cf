"""Shared machinery of the backends that build and run real kernels (cpu, npu).

* :mod:`.cache`: a content-addressed build cache (source + flags + toolchain),
  each build in its own work directory, published atomically;
* :mod:`.process`: run a command in its own process group under a time limit
  and turn a crash, hang, compiler error or wrong result into a failed
  :class:`~aoe_optuna.backends.base.Measurement` with its kind;
* :mod:`.toolchain`: identify a compiler (its ``--version``) for the cache key.

A backend renders its sources, asks the cache for an artifact (building it on
a miss), then runs a driver with :func:`run_limited` and reads its result.
"""

from aoe_optuna.backends.kernel_build.cache import BuildCache, BuildError, BuildResult, build_key
from aoe_optuna.backends.kernel_build.process import (
    EXIT_WRONG_RESULT,
    RunResult,
    failure_from_run,
    first_lines,
    run_limited,
    run_log,
)
from aoe_optuna.backends.kernel_build.toolchain import toolchain_id

__all__ = [
    "EXIT_WRONG_RESULT",
    "BuildCache",
    "BuildError",
    "BuildResult",
    "RunResult",
    "build_key",
    "failure_from_run",
    "first_lines",
    "run_limited",
    "run_log",
    "toolchain_id",
]
