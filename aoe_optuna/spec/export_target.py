"""Which kernel a study's best config is exported as, and that kernel's rules.

``kernel``: the npu backend's simple kernel (``aoe-tune export --output``);
``catlass``: a catlass instantiation header (``--catlass-header``; the space has
catlass's knobs); ``kb``: knowledge-base entries only, with the reason no kernel is
written (a CPU-tuned config, a workload of several dtypes, a SoC or dtype the kernel
lacks); ``none``: the space is the backend's own (a recorded Kernel Tuner space).

A study of the ``kernel`` or ``catlass`` kind gets the kernel's rules
(:mod:`aoe_optuna.backends.npu.simple_gemm.rules`,
:mod:`aoe_optuna.backends.npu.catlass.rules`) beside the chip's, so what the study
measures is what its export can write. A rule no value of the space can break is left
out (:func:`~aoe_optuna.space.kernel_rule.breakable`), so a space the kernel fully covers
keeps its feasible set and its free parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aoe_optuna.backends.npu.catlass import rules as catlass_rules
from aoe_optuna.backends.npu.simple_gemm import rules as simple_rules
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.constraints import Rule
from aoe_optuna.space.kernel_rule import breakable
from aoe_optuna.space.params import KNOWN_PARAMS, Param, default_config
from aoe_optuna.space.presets import CATLASS_PARAMS

ExportKind = Literal["kernel", "catlass", "kb", "none"]


@dataclass(frozen=True)
class ExportTarget:
    kind: ExportKind
    why_no_kernel: str | None = None  # for ``kb`` and ``none``: one line

    @property
    def writes_kernel(self) -> bool:
        return self.kind in ("kernel", "catlass")


def export_target(names: Sequence[str], dtypes: Sequence[str], profile: SocProfile,
                  backend_space: bool, runs_on_soc: bool) -> ExportTarget:
    """The export of a study tuning ``names`` for GEMMs of ``dtypes`` on ``profile``."""
    if backend_space:
        return ExportTarget("none", "the space is the backend's own: no GEMM tunables "
                            "to write")
    if not runs_on_soc:
        return ExportTarget("kb", "the backend tunes a kernel of another device, not an "
                            "Ascend C kernel")
    kinds = sorted(set(dtypes))
    if len(kinds) != 1:
        return ExportTarget("kb", f"the workload mixes dtypes {kinds}; one kernel build has "
                            "one element type")
    if set(names) & set(CATLASS_PARAMS):
        why = catlass_rules.product_reason(profile, kinds[0])
        return ExportTarget("kb", f"catlass header: {why}") if why else ExportTarget("catlass")
    why = simple_rules.product_reason(kinds[0])
    return ExportTarget("kb", f"the npu backend's kernel: {why}") if why else ExportTarget(
        "kernel")


def export_rules(target: ExportTarget, profile: SocProfile, dtype: str,
                 params: Sequence[Param]) -> list[Rule]:
    """The rules of the kernel ``target`` writes, those the space's values can break."""
    if target.kind == "catlass":
        rules: list[Rule] = list(catlass_rules.catlass_rules(profile, dtype))
    elif target.kind == "kernel":
        rules = list(simple_rules.simple_kernel_rules())
    else:
        return []
    tuned = {p.name for p in params}
    fixed: dict[str, Any] = {k: v for k, v in default_config().items()
                             if k not in tuned and k in KNOWN_PARAMS}
    return breakable(rules, params, fixed)
