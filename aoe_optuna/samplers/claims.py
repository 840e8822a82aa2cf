"""Claims: how samplers in different workers avoid proposing the same config.

Optuna creates a trial (RUNNING, no params) and only then asks the sampler;
the params reach storage when the objective suggests them. While one worker's
sampler is still fitting, another worker sees that trial without params, and
two deterministic samplers on the same history pick the same best config.

So a sampler *claims* its proposal: it writes the config to the trial's
system attributes, then reads the other trials. If any of them holds the
same config (as params or as a claim), it yields and tries its next
candidate. Whichever of two racing samplers reads last sees the other's
claim, so at most one of them keeps a config; both yielding only costs a
second round. No locks: the storage is the only thing workers share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

CLAIM_ATTR = "aoe:claim"
LIVE = (TrialState.RUNNING, TrialState.WAITING)


def claimed_params(trial: FrozenTrial) -> dict[str, Any]:
    """What a trial will measure: enqueued fixed params, its claim, its suggested params."""
    claim = trial.system_attrs.get(CLAIM_ATTR) if trial.state in LIVE else None
    return {
        **trial.system_attrs.get("fixed_params", {}),
        **(claim if isinstance(claim, dict) else {}),
        **trial.params,
    }


def claim_first_free(
    study: optuna.Study,
    trial: FrozenTrial,
    ranked: Iterable[Mapping[str, Any]],
    max_rounds: int = 16,
) -> dict[str, Any] | None:
    """Claim the first config of ``ranked`` that no other trial holds or claims.

    Returns the claimed config, or None when ``max_rounds`` candidates were all
    taken (the caller then falls back to something else).
    """
    for rounds, candidate in enumerate(ranked):
        if rounds >= max_rounds:
            return None
        config = dict(candidate)
        study._storage.set_trial_system_attr(trial._trial_id, CLAIM_ATTR, config)
        # All trials, not only live ones: the one that claimed this config may have
        # finished since this sampler read the study.
        others = study.get_trials(deepcopy=False)
        taken = any(
            t.number != trial.number and claimed_params(t) == config for t in others
        )
        if not taken:
            return config
    return None
