"""Which measured configs enter a race: those whose first timing could hide the best.

A config whose first cost lies within the noise of the best first cost (z noise
sigmas of a difference of two timings) plus the tie margin could be the true
best or tie with it; anything further is slower beyond doubt and is not re-timed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

BAND_SIGMAS = 2.5  # a contender lies within this many noise sigmas of a difference
MAX_CONTENDERS = 5


def band(rel_noise: float, epsilon: float, sigmas: float = BAND_SIGMAS) -> float:
    """The factor over the best first cost within which a config is a contender."""
    return math.exp(sigmas * math.sqrt(2.0) * math.log1p(rel_noise) + math.log1p(epsilon))


def contenders(costs: Sequence[float], rel_noise: float | None, epsilon: float,
               max_contenders: int = MAX_CONTENDERS) -> list[int]:
    """Indices into ``costs`` (lower is better; NaN or inf: failed) of the race's
    contenders, best first cost first, at most ``max_contenders``. Without a known noise
    (a model that answers each config with one figure) only the best: nothing to race."""
    ok = [i for i, c in enumerate(costs) if math.isfinite(c) and c > 0]
    if not ok:
        return []
    ranked = sorted(ok, key=lambda i: (costs[i], i))
    if not rel_noise:
        return ranked[:1]
    limit = costs[ranked[0]] * band(rel_noise, epsilon)
    return [i for i in ranked if costs[i] <= limit][:max(max_contenders, 1)]


def joiners(leader_costs: Sequence[float], spread: float, first_costs: Sequence[float],
            epsilon: float, room: int) -> list[int]:
    """Indices into ``first_costs`` (configs measured once, not raced, best first) of the
    configs that could still beat the race's leader: their first cost lies within the
    band over the leader's re-timed geometric mean, not over the luckiest first cost.
    When re-timing shows the leader's first timing was a lucky draw (its curse is wider
    than the noise the contenders were chosen by), these join the race. ``spread``: the
    relative noise of one timing, as the race's own re-timings show it; ``room``: how
    many may still join."""
    if room <= 0 or not leader_costs:
        return []
    mean = math.exp(sum(math.log(c) for c in leader_costs) / len(leader_costs))
    limit = mean * band(spread, epsilon)
    return [i for i, c in enumerate(first_costs) if math.isfinite(c) and c <= limit][:room]
