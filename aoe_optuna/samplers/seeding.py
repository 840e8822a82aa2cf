"""One rule for a sampler's seed, so both samplers reproduce and validate it alike."""

from __future__ import annotations

import numpy as np

SEED_LIMIT = 2**31  # fresh seeds stay below this: seed + trial number fits every RNG we feed


def resolve_seed(seed: int | None, owner: str) -> int:
    """``seed`` checked (a non-negative int), or a fresh one from the OS when None."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % SEED_LIMIT)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"{owner}: seed: expected a non-negative integer, got {seed!r}")
    return int(seed)
