"""A run whose every measurement failed: the one line that says so, and why.

A failure that every trial shares (a compiler that builds nothing, a driver
that cannot start) would otherwise end in a summary of failures and exit 0, as
if the study had tuned something. The commands print :meth:`AllFailed.line`
on stderr; where the study holds no successful measurement at all there is
nothing to export, and the run exits non-zero.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_FAILURE, ATTR_FAILURE_KIND
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.trials.recovery import stored_value, trial_config

REASON_CHARS = 240  # a compiler's message is long; its head says what failed


@dataclass(frozen=True)
class AllFailed:
    """Measurements that all failed, the failure most of them share, and whether the
    study holds any successful measurement (from earlier runs) at all."""

    count: int
    kind: str
    reason: str
    sharing: int  # how many failed as ``kind: reason``
    baseline: bool  # the baseline config among them
    study_has_result: bool

    def line(self) -> str:
        """``all 3 measurements failed, the baseline's included, the same way: ...``."""
        what = f"all {self.count} measurement{'s' if self.count != 1 else ''}"
        if self.study_has_result:
            what += " of this run"
        what += " failed" + (", the baseline's included," if self.baseline else "")
        how = ("the same way" if self.sharing == self.count
               else f"{self.sharing} of them the same way")
        return f"{what} {how}: {self.kind}: {self.reason}"


def all_failed(trials: Sequence[FrozenTrial], before: Sequence[FrozenTrial] = (),
               baseline: Mapping[str, Any] | None = None) -> AllFailed | None:
    """The failure of the measurements of ``trials`` that ``before`` (the study as a run
    found it) did not hold, when there are some and none succeeded; None otherwise."""
    earlier = {t.number for t in before if is_measured(t)}
    ran = [t for t in trials if t.number not in earlier and is_measured(t)]
    if not ran or any(_succeeded(t) for t in ran):
        return None
    ways = Counter((str(t.user_attrs.get(ATTR_FAILURE_KIND, "unknown")),
                    _short(str(t.user_attrs.get(ATTR_FAILURE, "")))) for t in ran)
    (kind, reason), sharing = ways.most_common(1)[0]
    with_baseline = baseline is not None and any(
        (config := trial_config(t)) and all(config.get(k) == v for k, v in baseline.items())
        for t in ran)
    return AllFailed(len(ran), kind, reason or "no reason recorded", sharing, with_baseline,
                     any(_succeeded(t) for t in trials if is_measured(t)))


def _succeeded(trial: FrozenTrial) -> bool:
    return trial.state == TrialState.COMPLETE or stored_value(trial) is not None


def _short(reason: str) -> str:
    """One line, its head only."""
    text = " ".join(reason.split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "..."
