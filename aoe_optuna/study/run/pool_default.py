"""How many builders a run gets when ``--builders`` is not given, per backend.

A build pool changes which configs a seeded study proposes (the sampler sees
the candidates in flight) and, where builds share the timing's cores, what a
timing reads. It is the default only where no measured value can change (the
backend's ``pooled_by_default``, :class:`aoe_optuna.backends.base.BackendBase`):

- ``npu``: builds run on host cores, timings on the card, and the host program
  that launches the kernels is pinned to a core no builder uses
  (:meth:`.build_pool.PoolPlan.for_host`, ``reserve``). Default: the host's
  usable cores minus one per device, shared out over the devices.
- ``cpu``: the timing core shares the host's caches with the builds (values
  read up to 9% low beside a build, docs/benchmarks/cpu_and_builds.md): opt in.
- ``simulator`` (and ``replay``): the pool only moves the virtual clock, which
  ``max_search_time`` and every reported simulated time are read from, and a
  seeded simulator study is reproducible bit for bit: opt in.

docs/decisions/0028-build-pool-default.md says why.
"""

from __future__ import annotations

from aoe_optuna.backends.base import BackendBase
from aoe_optuna.study.run.build_pool import usable_cpus


def builders_for(backend: type[BackendBase], asked: int | None,
                 devices: int = 1) -> int | None:
    """Each worker's builders: ``asked`` if given (0: no pool), else the backend's
    default for ``devices`` devices on this host; None: build, then time, in turn."""
    if asked is not None:
        return asked or None
    if not backend.pooled_by_default:
        return None
    spare = len(usable_cpus()) - devices  # one core per device runs its host program
    return spare // devices if spare >= devices else None
