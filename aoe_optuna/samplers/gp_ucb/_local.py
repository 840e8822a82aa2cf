"""Local phase: when the best config stops improving, look hard around it.

On tiling spaces the good configs form narrow ridges (the recorded RTX 2080
Ti GEMM has 10 of 17,956 configs within 5% of the optimum), and a global UCB
that has found a good ridge tends to keep sampling far-off uncertain configs
instead of the two-parameter moves that lead from it to the optimum. It is
opt-in (``local_patience``): the default keeps UCB global. Once the incumbent
has not improved for ``patience`` measurements, every other suggestion
maximises the same UCB over the unseen configs at most ``radius`` parameters
(index positions) away from the incumbent, a discrete trust region in the
spirit of TuRBO (Eriksson et al., NeurIPS 2019); the other suggestions stay global.
"""

from __future__ import annotations

import numpy as np


def stalled_for(targets: np.ndarray) -> int:
    """Measurements since the best one (``targets`` in trial order, larger is better)."""
    if targets.size == 0:
        return 0
    return int(targets.size - 1 - int(np.argmax(targets)))


def near(rows: np.ndarray, center: np.ndarray, radius: int) -> np.ndarray:
    """Mask of ``rows`` (index rows) differing from ``center`` in at most ``radius`` params."""
    return (rows != center[None, :]).sum(axis=1) <= radius


def is_local_step(targets: np.ndarray, patience: int | None) -> bool:
    """Local on every other suggestion once the best is ``patience`` measurements old."""
    if patience is None:
        return False
    return stalled_for(targets) >= patience and targets.size % 2 == 0
