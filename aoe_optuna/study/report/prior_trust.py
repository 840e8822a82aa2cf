"""Which prior a study's sampler used, and how much its model trusts it now.

GPUCBSampler stores with each proposal the prior it used and what its model
made of it (``attrs.GP_PRIOR_ATTR``: the weight of the prior's score in the
GP's mean, the rank correlation of the scores with the measured values; during
the start, before any weighing, only that the prior guided it).
The run summary and the dashboard note show the latest one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from optuna.trial import FrozenTrial

from aoe_optuna.attrs import GP_PRIOR_ATTR


def latest_trust(trials: Sequence[FrozenTrial]) -> dict[str, Any] | None:
    """The prior record of the latest trial that has one (None: no prior was used)."""
    for t in reversed(trials):
        record = t.system_attrs.get(GP_PRIOR_ATTR)
        if isinstance(record, dict) and record.get("name"):
            return record
    return None


def trust_text(record: dict[str, Any]) -> str:
    """``recording X: weight 0.82 in the GP's mean, rank correlation 0.91 over 37 measured``,
    or, before the model has weighed it, ``recording X: guiding the start, not weighed
    yet``."""
    parts = []
    if record.get("stage") == "start":
        parts.append("guiding the start, not weighed yet")
    if "weight" in record:
        parts.append(f"weight {record['weight']:.2f} in the GP's mean")
    elif record.get("mechanism") == "feature":
        parts.append("an input of the GP")
    if "correlation" in record:
        parts.append(f"rank correlation {record['correlation']:.2f} over "
                      f"{record.get('measured', 0)} measured")
    return f"{record['name']}: " + ", ".join(parts) if parts else str(record["name"])
