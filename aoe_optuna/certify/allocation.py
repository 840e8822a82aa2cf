"""Which rival a race times next beside its leader: the most ambiguous one (LUCB).

Once every candidate has its first rounds, a round of the race times the leader and
one rival: the rival whose difference to the leader is the smallest in units of its
standard error, so the one most likely to be faster than the leader (the two most
ambiguous arms of LUCB: Kalyanakrishnan, Tewari, Auer and Stone, "PAC subset
selection in stochastic multi-armed bandits", ICML 2012). A rival the data already
place far behind costs nothing more; one that a lucky or unlucky timing has put on
the border keeps being timed until the data say which side it is on. Unlike a rival
dropped for good, a rival passed over in one round is timed again as soon as it is
the most ambiguous.

Optimal computing budget allocation (Chen, Lin, Yücesan and Chick, Discrete Event
Dynamic Systems 10, 2000) gives rival ``i`` timings in proportion to
``(sigma / delta_i)^2``; timed one pair at a time, its largest deficit falls on the
same rival as the smallest ``delta_i / se_i`` (both shrink ``n_i delta_i^2``), with
no resolution to choose for the differences near zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def most_ambiguous(diffs: Sequence[float], ses: Sequence[float]) -> int:
    """The index of the rival most likely to be faster than the leader: the least
    ``diff / se`` (``diffs``: each rival's mean log cost over the leader's; ``ses``:
    their standard errors). A rival with no standard error yet (0, inf or NaN) comes
    first: nothing is known of it. Ties go to the first."""
    if not diffs or len(diffs) != len(ses):
        raise ValueError("expected one standard error per rival, and a rival")

    def score(i: int) -> float:
        se = ses[i]
        if not (math.isfinite(se) and se > 0):
            return -math.inf
        return diffs[i] / se

    return min(range(len(diffs)), key=lambda i: (score(i), i))
