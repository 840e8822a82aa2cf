"""REINFORCE with a moving-average baseline, a decaying entropy bonus and self-imitation.

One update per batch of measured trials, in the order they are replayed.
Reward is the log throughput standardised over every measurement so far
(clipped to [-3, 3]); a failed measurement gets the worst reward seen minus a
penalty. The gradient is

    - mean_b (r_b - baseline) log pi(a_b)         (REINFORCE)
    - beta_t  mean entropy of pi's conditionals    (beta_t = beta_0 * decay^t)
    - w mean_e max(r_e - baseline, 0) log pi(a_e)  (self-imitation of the best
                                                    configs measured so far)

The self-imitation term (Oh et al., "Self-Imitation Learning", ICML 2018)
reuses the few good measurements a tuning budget affords instead of seeing
each once; it fades by itself as the baseline rises to the elites' reward.
Log-probabilities are those of the masked policy the configs were drawn from
whenever the masks are exact (materialised cores); plain softmax otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from aoe_optuna.samplers.reinforce._adam import Adam
from aoe_optuna.samplers.reinforce._masking import ChoiceMasker
from aoe_optuna.samplers.reinforce._policy import AutoregressivePolicy, masked_log_softmax
from aoe_optuna.samplers.settings import settings_of

REWARD_CLIP = 3.0


@dataclass(frozen=True)
class LearnerSettings:
    """Hyper-parameters of the online learner (all may be given as sampler kwargs)."""

    batch_size: int = 8
    lr: float = 0.03
    steps_per_batch: int = 2
    entropy: float = 0.03
    entropy_decay: float = 0.85
    baseline_momentum: float = 0.7
    fail_penalty: float = 1.0
    elite: int = 16
    elite_weight: float = 3.0
    hidden: int = 64
    explore: float = 0.1  # uniform share of each step's distribution
    prior_temperature: float = 1.0  # divides a pretrained policy's logits (softer start)


def learner_settings(value: LearnerSettings | Mapping[str, Any] | None) -> LearnerSettings:
    """``value`` as LearnerSettings: the defaults for None, a mapping checked field by field."""
    return settings_of(LearnerSettings, value, "ReinforceSampler: learner")


def log_probs_and_entropy(
    policy: AutoregressivePolicy, features: torch.Tensor, idx: np.ndarray,
    masker: ChoiceMasker | None,
    explore: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per config: log pi(config) and the summed entropy of its step conditionals."""
    t_idx = torch.as_tensor(idx, dtype=torch.int64)
    logits = policy.all_logits(features, t_idx)
    logp = torch.zeros(idx.shape[0])
    ent = torch.zeros(idx.shape[0])
    for j, lg in enumerate(logits):
        mask = masker.feasible_batch(idx, j) if masker is not None else None
        if mask is not None:
            mask[np.arange(idx.shape[0]), idx[:, j]] = True  # a foreign config stays scoreable
        lsm = masked_log_softmax(lg, mask, explore)
        logp = logp + lsm.gather(1, t_idx[:, j : j + 1]).squeeze(1)
        ent = ent - (lsm.exp() * lsm.clamp_min(-1e4)).sum(1)
    return logp, ent


class ReinforceLearner:
    """The policy, its optimiser and the running statistics of one study."""

    def __init__(
        self,
        policy: AutoregressivePolicy,
        features: np.ndarray,
        masker: ChoiceMasker,
        settings: LearnerSettings,
    ) -> None:
        self.policy = policy
        self.features = torch.as_tensor(features, dtype=torch.float32)[None, :]
        self.masker = masker
        self.settings = settings
        self.optimizer = Adam(policy.parameters(), lr=settings.lr)
        self.n_updates = 0
        self.baseline: float | None = None
        self.rows: list[np.ndarray] = []  # measured configs (index rows)
        self.logs: list[float] = []  # log throughput, nan for a failed measurement

    def rewards(self, logs: np.ndarray) -> np.ndarray:
        """Standardised log throughput against every measurement so far; failures penalised."""
        ok = np.asarray([v for v in self.logs if np.isfinite(v)])
        mu = float(ok.mean()) if ok.size else 0.0
        sd = float(ok.std()) if ok.size > 1 else 1.0
        sd = sd if sd > 1e-12 else 1.0
        r = np.clip((logs - mu) / sd, -REWARD_CLIP, REWARD_CLIP)
        worst = float(np.clip((ok.min() - mu) / sd, -REWARD_CLIP, 0.0)) if ok.size else -1.0
        return np.where(np.isfinite(logs), r, worst - self.settings.fail_penalty)

    def update(self, rows: np.ndarray, values: np.ndarray) -> None:
        """One batch of measurements: ``values`` are throughputs (nan = failed)."""
        s = self.settings
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(values > 0, np.log(values), np.nan)
        self.rows.extend(np.asarray(rows, dtype=np.int64))
        self.logs.extend(logs.tolist())
        r = self.rewards(logs)
        baseline = float(r.mean()) if self.baseline is None else self.baseline
        adv = torch.as_tensor(r - baseline, dtype=torch.float32)
        elite_rows, elite_adv = self._elites(baseline)
        beta = s.entropy * s.entropy_decay**self.n_updates
        for _ in range(s.steps_per_batch):
            logp, ent = log_probs_and_entropy(
                self.policy, self.features, rows, self.masker, s.explore
            )
            loss = -(adv * logp).mean() - beta * ent.mean()
            if elite_rows.shape[0]:
                elp, _ = log_probs_and_entropy(
                    self.policy, self.features, elite_rows, self.masker, s.explore
                )
                loss = loss - s.elite_weight * (elite_adv * elp).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        m = s.baseline_momentum
        self.baseline = m * baseline + (1 - m) * float(r.mean())
        self.n_updates += 1

    def _elites(self, baseline: float) -> tuple[np.ndarray, torch.Tensor]:
        logs = np.asarray(self.logs)
        finite = np.flatnonzero(np.isfinite(logs))
        if self.settings.elite <= 0 or finite.size == 0:
            return np.zeros((0, len(self.masker.shape)), np.int64), torch.zeros(0)
        top = finite[np.argsort(-logs[finite], kind="stable")[: self.settings.elite]]
        adv = np.maximum(self.rewards(logs[top]) - baseline, 0.0)
        keep = adv > 0
        rows = np.stack([self.rows[i] for i in top[keep]]) if keep.any() else np.zeros(
            (0, len(self.masker.shape)), np.int64
        )
        return rows, torch.as_tensor(adv[keep], dtype=torch.float32)
