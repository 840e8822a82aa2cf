"""Which (config, M) to measure next: the one that could cut the kernel sets' weighted
latency most.

The sets of 1 to K kernels chosen now (from the configs measured, over the tuning
shapes) each serve every tuning shape t with some config, at the latency the model
predicts. A candidate config's optimistic latency is ``exp(mean - kappa x std)`` (a
lower confidence bound in log latency, as GP-UCB's upper one on throughput). Put in
place of a set's kernel on one of its ranges, it cuts that range's weighted time by
the sum over the range of ``weight_t x (incumbent_t - optimistic_t)`` where that is
positive; its gain for the set is the sum of those cuts over the ranges, and its
gain the mean over the sets. A single kernel must be good over the whole range of M
to score for K = 1, and one that wins at a single M scores only for the larger sets,
so the search looks for both. The config is measured at the unmeasured tuning shape
where its own cut is largest; a config measured at every shape gains nothing (a
config measured at other shapes is a timing only on the chip, and competes like any
other).

The kernel set is chosen from the model's predictions, so a config it would ship is
only as good as the prediction over its range. Each (config, shape) the current sets
ship unmeasured is also a candidate: its exposure, what the latency could be above the
prediction (``exp(mean + kappa x std) - exp(mean)``, weighted), is the time per step
the set could lose there, in the same unit as a new config's gain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KAPPA = 2.0  # standard deviations of log latency the bound reaches below the mean


@dataclass(frozen=True)
class Pick:
    row: int  # index into the candidate rows
    shape: int  # index into the tuning shapes
    gain_s: float  # the optimistic cut of the weighted time per step


def set_gains(mean: np.ndarray, std: np.ndarray, sets: list[tuple[np.ndarray, np.ndarray]],
              weight: np.ndarray, kappa: float = KAPPA) -> np.ndarray:
    """Each candidate's optimistic cut of the sets' weighted time, averaged over the sets.

    ``sets``: per set, the incumbent latency at each shape and the range (0, 1, ...)
    each shape belongs to; ``mean``/``std``: (candidates, shapes) of log latency (s)."""
    bound = np.exp(mean - kappa * std)
    total = np.zeros(mean.shape[0])
    for incumbent, owner in sets:
        cut = (incumbent[None, :] - bound) * weight[None, :]
        per_range = np.zeros((mean.shape[0], int(owner.max()) + 1))
        np.add.at(per_range.T, owner, cut.T)
        total += np.clip(per_range, 0.0, None).sum(axis=1)
    return total / max(len(sets), 1)


def where_to_measure(mean: np.ndarray, std: np.ndarray, best_s: np.ndarray,
                     weight: np.ndarray, measured: np.ndarray,
                     kappa: float = KAPPA) -> np.ndarray:
    """Per candidate, the unmeasured shape of largest weighted optimistic cut below the
    best incumbent there (-1: measured everywhere)."""
    bound = np.exp(mean - kappa * std)
    cut = np.where(measured, -np.inf, (best_s[None, :] - bound) * weight[None, :])
    return np.where(measured.all(axis=1), -1, np.argmax(cut, axis=1))


def exposure(mean: np.ndarray, std: np.ndarray, weight: np.ndarray, shipped: np.ndarray,
             measured: np.ndarray, kappa: float = KAPPA) -> np.ndarray:
    """(candidates, shapes) of weight x how far above its prediction a shipped pair's
    latency could be; 0 where the pair is measured or not shipped."""
    up = (np.exp(mean + kappa * std) - np.exp(mean)) * weight[None, :]
    return np.where(shipped & ~measured, up, 0.0)


def measured_near(ids: np.ndarray, shapes: np.ndarray, pairs: set[tuple[int, int]],
                  reach: float = 0.0) -> np.ndarray:
    """(len(ids), len(shapes)): whether config ``ids[i]`` was measured at an M within
    ``reach`` of ``shapes[j]`` in log2 M (0: at that very M). A config's latency over M
    moves smoothly between the steps of its tiles and waves, so a pair next to a
    measured one is a check the model has already had."""
    if reach <= 0:
        return np.array([[(int(f), int(m)) in pairs for m in shapes.tolist()]
                         for f in ids.tolist()], dtype=bool).reshape(len(ids), len(shapes))
    seen: dict[int, list[float]] = {}
    for f, m in pairs:
        seen.setdefault(f, []).append(np.log2(float(m)))
    logs = np.log2(shapes.astype(float))
    out = np.zeros((len(ids), len(shapes)), dtype=bool)
    for i, f in enumerate(ids.tolist()):
        if int(f) in seen:
            at = np.array(seen[int(f)])
            out[i] = (np.abs(logs[:, None] - at[None, :]) <= reach + 1e-9).any(axis=1)
    return out


def pick_pairs(score: np.ndarray, count: int) -> list[Pick]:
    """Up to ``count`` (candidate, shape) pairs with the largest score, none of them 0."""
    flat = np.argsort(-score, axis=None, kind="stable")[:count]
    rows, shapes = np.unravel_index(flat, score.shape)
    return [Pick(int(r), int(s), float(score[r, s])) for r, s in zip(rows, shapes, strict=True)
            if score[r, s] > 0]


def pick(gain: np.ndarray, shape: np.ndarray, count: int) -> list[Pick]:
    """Up to ``count`` distinct candidates with the largest gain, each at its ``shape``
    (none with no gain, none measured everywhere)."""
    order = np.argsort(-np.where(shape < 0, -np.inf, gain), kind="stable")[:count]
    return [Pick(int(r), int(shape[r]), float(gain[r])) for r in order
            if gain[r] > 0 and shape[r] >= 0]


def shape_weights(m: np.ndarray, weight: np.ndarray, tuned: np.ndarray) -> np.ndarray:
    """Each tuning shape's share of the mix: the weight of the M nearest to it in log M
    (a tie goes to the smaller shape)."""
    logs = np.log2(tuned.astype(float))
    cut = (logs[:-1] + logs[1:]) / 2
    owner = np.searchsorted(cut, np.log2(m.astype(float)), side="left")
    return np.bincount(owner, weights=weight, minlength=len(tuned))
