"""Where a kernel-set run's mix comes from: ``--mix`` (a range, a serving log or an msprof
profile) or, without it, the spec's own workload (its serving buckets and weights)."""

from __future__ import annotations

from pathlib import Path

from aoe_optuna.kernel_set.operator_mix import MixSteps, from_model, from_profile, from_workload
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.workload.csv_rows import CsvRows
from aoe_optuna.workload.files import checked_file
from aoe_optuna.workload.msprof import OP_TYPE
from aoe_optuna.workload.shape_mix import read_mix


def mix_steps(spec: StudySpec, mix: str | None) -> tuple[MixSteps, str]:
    """The operators of the mix and, in words, where it came from."""
    if mix is None:
        return from_workload(spec.workload), f"the workload of {spec.source}"
    if _is_op_summary(mix):
        return from_profile(mix), f"msprof profile {mix}"
    shape_mix = read_mix(mix)
    return from_model(spec, shape_mix), shape_mix.describe()


def _is_op_summary(text: str) -> bool:
    """A CSV file whose header names msprof's ``OP Type`` column."""
    if text.lstrip().startswith("{") or Path(text).suffix.lower() == ".json":
        return False
    return OP_TYPE in CsvRows(checked_file(text, "a mix (JSON range, serving log CSV or "
                                           "msprof op_summary CSV)"), text).header
