"""The policy network: operator features + choices so far -> next parameter's choice.

Autoregressive over the parameters in the space's fixed order. One shared
trunk reads ``[features, one-hot of the choices made so far, one-hot of the
step]``; one categorical head per parameter turns the trunk's output into
logits over that parameter's choices. Teacher forcing evaluates every step of
a batch of complete configs in one pass (training); sampling runs the steps
one after another with masks. The last layer of each head starts at zero, so
an untrained policy is uniform over whatever the masks allow.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn


class PolicyMismatchError(ValueError):
    """A saved policy whose parameters or features do not fit the study."""


class AutoregressivePolicy(nn.Module):
    """Categorical heads over ``shape`` (choices per parameter), conditioned on features."""

    def __init__(self, n_features: int, shape: Sequence[int], hidden: int = 64) -> None:
        super().__init__()
        self.n_features = n_features
        self.shape = tuple(int(k) for k in shape)
        self.hidden = hidden
        self.temperature = 1.0  # > 1 softens a pretrained policy into a broader prior
        d, total = len(self.shape), sum(self.shape)
        self._offsets = np.concatenate([[0], np.cumsum(self.shape)[:-1]]).astype(np.int64)
        # prefix_mask[j, c]: one-hot column c belongs to a parameter before step j
        owner = np.repeat(np.arange(d), self.shape)
        self.register_buffer(
            "prefix_mask", torch.as_tensor(owner[None, :] < np.arange(d)[:, None]).float()
        )
        self.trunk = nn.Sequential(
            nn.Linear(n_features + total + d, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
        )
        self.heads = nn.ModuleList(nn.Linear(hidden, k) for k in self.shape)
        for head in self.heads:
            nn.init.zeros_(head.weight)
            nn.init.zeros_(head.bias)

    def _onehot(self, idx: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(idx.shape[0], sum(self.shape))
        cols = idx + torch.as_tensor(self._offsets)[None, : idx.shape[1]]
        out.scatter_(1, cols, 1.0)
        return out

    def step_logits(self, features: torch.Tensor, idx: torch.Tensor, j: int) -> torch.Tensor:
        """Logits (n, k_j) of parameter ``j`` given the choices ``idx[:, :j]``."""
        n = idx.shape[0]
        prefix = self._onehot(idx[:, :j]) if j else torch.zeros(n, sum(self.shape))
        step = torch.zeros(n, len(self.shape))
        step[:, j] = 1.0
        x = torch.cat([features.expand(n, -1), prefix, step], dim=1)
        return self.heads[j](self.trunk(x)) / self.temperature

    def all_logits(self, features: torch.Tensor, idx: torch.Tensor) -> list[torch.Tensor]:
        """Teacher-forced logits of every step for complete configs ``idx`` (n, d)."""
        n, d = idx.shape
        onehot = self._onehot(idx)  # (n, total)
        prefix = onehot[:, None, :] * self.prefix_mask[None]  # (n, d, total)
        step = torch.eye(d).expand(n, d, d)
        x = torch.cat([features.reshape(-1, 1, self.n_features).expand(n, d, -1), prefix, step], 2)
        h = self.trunk(x)
        return [head(h[:, j]) / self.temperature for j, head in enumerate(self.heads)]


def masked_log_softmax(
    logits: torch.Tensor, mask: np.ndarray | None, explore: float = 0.0
) -> torch.Tensor:
    """Log-probs of the softmax over allowed choices, mixed with a uniform share ``explore``.

    The uniform share keeps every allowed choice reachable however sure the
    network becomes; it is part of the policy (sampling and gradients use the
    same mixture), not an outside perturbation.
    """
    if mask is None:
        mask = np.ones(tuple(logits.shape), dtype=bool)
    allowed = torch.as_tensor(mask)
    lsm = torch.log_softmax(logits.masked_fill(~allowed, -1e9), dim=-1)
    if explore <= 0:
        return lsm
    n_allowed = allowed.sum(dim=-1, keepdim=True).clamp_min(1)
    uniform = torch.where(allowed, -torch.log(n_allowed.float()), torch.full_like(lsm, -1e9))
    mixed = torch.logaddexp(lsm + np.log1p(-explore), uniform + np.log(explore))
    return mixed.masked_fill(~allowed, -1e9)


def choose(log_probs: torch.Tensor, rng: np.random.Generator) -> np.ndarray:
    """One draw per row from categorical log-probs, by inverse CDF with ``rng``."""
    p = log_probs.detach().exp().double().numpy()
    cdf = np.cumsum(p, axis=1)
    u = rng.random(p.shape[0])[:, None] * cdf[:, -1:]
    pick = (cdf <= u).sum(axis=1)
    # never land on a zero-probability choice through rounding
    pick = np.minimum(pick, p.shape[1] - 1)
    bad = p[np.arange(p.shape[0]), pick] <= 0
    if bad.any():
        pick[bad] = p[bad].argmax(axis=1)
    return pick
