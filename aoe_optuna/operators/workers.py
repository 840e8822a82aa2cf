"""Workers for an operator run: processes on this host, and followers on other hosts.

The tuner alone decides which operator gets the next chunk. It writes each
operator study's target (measurements it may hold) into the parent study's
``allocation`` and, once the chunk is done, lowers it to what was measured.
Local workers are the study's own worker processes (a GEMM shape's:
:meth:`aoe_optuna.study.session.StudySession.run`; an attention or vector
kernel's: :meth:`aoe_optuna.operators.units.LayerUnit.run`); a follower on
another host polls the allocation and joins whichever study is below its
target, of either kind.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable

import optuna

from aoe_optuna.attrs import ALLOCATION_ATTR, CLOSED_ATTR, DONE_ATTR
from aoe_optuna.operators.units import join_study
from aoe_optuna.study.run.loop import Budget
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.session import SEED_RANGE, SamplerRequest

FOLLOW_POLL_S = 1.0
FOLLOW_IDLE_S = 600.0  # a follower that got no work for this long (a dead tuner) stops


def follow_allocation(storage: optuna.storages.BaseStorage, parent: str,
                      measure: Callable[[str, int], None], poll_s: float = FOLLOW_POLL_S,
                      max_idle_s: float = FOLLOW_IDLE_S) -> int:
    """Join the chunks the tuner allocates, until it marks the run done (or nothing came
    for ``max_idle_s``). ``measure(study_name, target)`` runs one chunk. Returns the
    number of chunks joined."""
    joined, idle_since = 0, time.monotonic()
    while True:
        attrs = _load(storage, parent).user_attrs
        if attrs.get(DONE_ATTR):
            return joined
        closed = set(attrs.get(CLOSED_ATTR, []))
        for name, target in attrs.get(ALLOCATION_ATTR, {}).items():
            if name in closed:
                continue
            trials = _load(storage, name).get_trials(deepcopy=False)
            if sum(1 for t in trials if is_measured(t)) < int(target):
                measure(name, int(target))
                joined += 1
                idle_since = time.monotonic()
        if time.monotonic() - idle_since > max_idle_s:
            return joined
        time.sleep(poll_s)


def follow_run(storage: optuna.storages.BaseStorage, storage_url: str, parent: str,
               on_event: Callable[[str], None], max_idle: int,
               builders: int | None = None) -> int:
    """A follower on this host: measure the chunks the tuner of ``parent`` allocates, each
    study opened by name through the session (:func:`.units.join_study`) with the study's
    own sampler and a seed of this follower's (the tuner's seed would propose what the
    tuner proposes), building ahead on ``builders``. Returns the number of chunks
    joined."""
    def measure(study_name: str, target: int) -> None:
        unit = join_study(storage, storage_url, study_name,
                          SamplerRequest(seed=secrets.randbelow(SEED_RANGE)))
        on_event(f"joining {study_name} up to {target} measurements")
        unit.run(Budget(n_measurements=target), max_idle=max_idle, builders=builders)

    os.environ.setdefault("AOE_WORKER_INDEX", "0")
    return follow_allocation(storage, parent, measure)


def _load(storage: optuna.storages.BaseStorage, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=storage,
                             sampler=optuna.samplers.RandomSampler())
