"""A kernel-set run's parent study, opened for a command: found through the session (its
storage, the spec given or the one it stored), its plan written once or read back,
and the tuner built on it. The command line only parses the options and prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import optuna

from aoe_optuna.attrs import KERNEL_SET_PLAN_ATTR
from aoe_optuna.backends.base import BackendBase
from aoe_optuna.kernel_set.plan import KernelSetPlan
from aoe_optuna.kernel_set.tuner import KernelSetTuner, TunerOptions
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.study.create import StudyError, load_or_create
from aoe_optuna.study.session import StoredPlan, find_study, hold_plan

PARENT_SUFFIX = "-kernel-set"  # a run's parent study: the spec's study name and this
SOURCE_ATTR = "kernel_set_source"  # where the mix came from, in words (informative)
BUDGET_ATTR = "budget"


@dataclass(frozen=True)
class KernelSetRun:
    storage: optuna.storages.BaseStorage
    storage_url: str
    name: str
    spec: StudySpec
    plan: KernelSetPlan
    parent: optuna.Study

    @property
    def stored_budget(self) -> int | None:
        value = self.parent.user_attrs.get(BUDGET_ATTR)
        return int(value) if value is not None else None

    def tuner(self, backend: BackendBase, options: TunerOptions,
              on_event: Callable[[str], None]) -> KernelSetTuner:
        self.parent.set_user_attr(BUDGET_ATTR, options.budget)
        return KernelSetTuner(self.storage, self.name, self.spec, self.plan.operators,
                              self.plan.tuned, backend, options, on_event)


def default_name(spec: StudySpec) -> str:
    return spec.default_study_name() + PARENT_SUFFIX


def open_run(storage_url: str, spec: StudySpec | None, name: str,
             plan: KernelSetPlan | None) -> KernelSetRun:
    """The run named ``name``: created with ``spec`` and ``plan``, or resumed from what
    it stored (a ``plan`` given to a run that holds another is refused in one line)."""
    found = find_study(storage_url, name, spec)
    stored = found.attrs.get(KERNEL_SET_PLAN_ATTR)
    if plan is None and stored is None:
        raise StudyError(f"study {name!r} is not a kernel-set run; pass --config SPEC to "
                         "start one")
    parent, spec = load_or_create(found.storage, name, found.spec,
                                  found.spec.roofline_tokens_per_s())
    if plan is None:
        plan = KernelSetPlan.from_document(stored, parent.user_attrs.get(SOURCE_ATTR, "stored"))
    else:
        hold_plan(parent, StoredPlan(KERNEL_SET_PLAN_ATTR, plan.document(), "kernel-set mix"))
        if SOURCE_ATTR not in parent.user_attrs:
            parent.set_user_attr(SOURCE_ATTR, plan.source)
    return KernelSetRun(found.storage, storage_url, name, spec, plan, parent)
