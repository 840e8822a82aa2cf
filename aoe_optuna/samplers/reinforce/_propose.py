"""Draw one config from the policy, masked so it is feasible and not tried before."""

from __future__ import annotations

import numpy as np
import torch

from aoe_optuna.samplers.reinforce._masking import ChoiceMasker
from aoe_optuna.samplers.reinforce._policy import AutoregressivePolicy, choose, masked_log_softmax

MAX_REDRAWS = 64  # only where exhaustion cannot be masked exactly (cores past materialising)


def propose(
    policy: AutoregressivePolicy,
    features: torch.Tensor,
    masker: ChoiceMasker,
    rng: np.random.Generator,
    tried: np.ndarray,
    tried_ids: set[int],
    explore: float = 0.0,
) -> np.ndarray | None:
    """An index row drawn from the masked policy, or None when none could be found.

    ``tried`` holds the index rows of every config already proposed (any state,
    any worker) and ``tried_ids`` their flat ids.
    """
    if masker.exact:
        return _draw(policy, features, masker, rng, tried, explore)
    space = masker.space
    for _ in range(MAX_REDRAWS):
        row = _draw(policy, features, masker, rng, None, explore)
        if row is not None and int(space.flat_id(row[None, :])[0]) not in tried_ids:
            return row
    return None


@torch.no_grad()
def _draw(
    policy: AutoregressivePolicy,
    features: torch.Tensor,
    masker: ChoiceMasker,
    rng: np.random.Generator,
    tried: np.ndarray | None,
    explore: float,
) -> np.ndarray | None:
    d = len(masker.shape)
    row = np.zeros(d, dtype=np.int64)
    for j in range(d):
        if tried is not None:
            mask = masker.allowed(row[:j], j, tried)
        else:
            mask = masker.feasible(row[:j], j)
        if not mask.any():
            return None
        logits = policy.step_logits(features, torch.as_tensor(row[None, :]), j)
        row[j] = choose(masked_log_softmax(logits, mask[None, :], explore), rng)[0]
        if tried is not None:
            tried = tried[tried[:, j] == row[j]]
    return row


def draw_batch(
    policy: AutoregressivePolicy,
    features: torch.Tensor,
    masker: ChoiceMasker,
    rng: np.random.Generator,
    n: int,
    explore: float = 0.0,
) -> np.ndarray:
    """``n`` feasible configs (repeats allowed) drawn together: pretraining's fast path.

    Needs exact masks (a materialised core).
    """
    if not masker.exact:
        raise ValueError("batched drawing needs a space whose feasible core is materialised")
    rows = np.zeros((n, len(masker.shape)), dtype=np.int64)
    with torch.no_grad():
        for j in range(len(masker.shape)):
            mask = masker.feasible_batch(rows, j)
            logits = policy.step_logits(features, torch.as_tensor(rows), j)
            rows[:, j] = choose(masked_log_softmax(logits, mask, explore), rng)
    return rows
