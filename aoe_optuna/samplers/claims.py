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

A finished trial's config never changes, so a sampler may keep a
:class:`FinishedClaims` per study: each finished trial is then hashed once,
and only the live trials (about one per worker) are compared on every call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import CLAIM_ATTR, OPTUNA_FIXED_PARAMS_KEY

LIVE = (TrialState.RUNNING, TrialState.WAITING)


def claimed_params(trial: FrozenTrial) -> dict[str, Any]:
    """What a trial will measure: enqueued fixed params, its claim, its suggested params."""
    claim = trial.system_attrs.get(CLAIM_ATTR) if trial.state in LIVE else None
    return {
        **trial.system_attrs.get(OPTUNA_FIXED_PARAMS_KEY, {}),
        **(claim if isinstance(claim, dict) else {}),
        **trial.params,
    }


def config_key(config: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A hashable key, equal for equal configs (params are choices: hashable values)."""
    return tuple(sorted(config.items()))


class FinishedClaims:
    """The configs of one study's finished trials, each trial read once."""

    def __init__(self) -> None:
        self._seen: set[int] = set()
        self._keys: set[tuple[tuple[str, Any], ...]] = set()

    def update(self, trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
        """Index the finished trials not seen yet; return the trials that are not finished."""
        live = []
        for t in trials:
            if t.number in self._seen:
                continue
            if t.state.is_finished():
                self._seen.add(t.number)
                self._keys.add(config_key(claimed_params(t)))
            else:
                live.append(t)
        return live

    def holds(self, config: Mapping[str, Any]) -> bool:
        """Whether a finished trial indexed so far held ``config``."""
        return config_key(config) in self._keys


def claim_first_free(
    study: optuna.Study,
    trial: FrozenTrial,
    ranked: Iterable[Mapping[str, Any]],
    max_rounds: int = 16,
    finished: FinishedClaims | None = None,
) -> dict[str, Any] | None:
    """Claim the first config of ``ranked`` that no other trial holds or claims.

    Returns the claimed config, or None when ``max_rounds`` candidates were all
    taken (the caller then falls back to something else). ``finished``: this
    study's index of finished trials' configs, kept across calls (same answer;
    each finished trial is then compared by one set lookup instead of a dict
    comparison per trial and call; docs/decisions/0009-reinforce-claim-index-and-caches.md).
    """
    for rounds, candidate in enumerate(ranked):
        if rounds >= max_rounds:
            return None
        config = dict(candidate)
        study._storage.set_trial_system_attr(trial._trial_id, CLAIM_ATTR, config)
        # All trials, not only live ones: the one that claimed this config may have
        # finished since this sampler read the study.
        others = study.get_trials(deepcopy=False)
        if finished is None:
            taken = any(
                t.number != trial.number and claimed_params(t) == config for t in others
            )
        else:
            live = finished.update(others)
            taken = finished.holds(config) or any(
                t.number != trial.number and claimed_params(t) == config for t in live
            )
        if not taken:
            return config
    return None
