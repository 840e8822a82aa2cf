"""A prior from another recording of the same kernel (a Kernel Tuner cache file).

The recording's times, as throughput (1 / time, the replayed study's own
objective), for every config it holds; its failed configs are predicted to
fail. ``aoe-tune bench --space X --prior-space Y`` replays X with Y as the
prior: the same kernel on another device, so the gain is measured on real
measurements.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aoe_optuna.backends.replay.backend import load_recorded
from aoe_optuna.samplers.priors.table import TablePrior


def recording_prior(path: str | Path) -> TablePrior:
    """The recording at ``path`` as a prior (``ValueError`` names a file it cannot read)."""
    recorded = load_recorded(Path(path))
    configs = [dict(zip(recorded.keys, c, strict=True)) for c in recorded.configs]
    ok = np.array([f is None for f in recorded.failures]) & np.isfinite(recorded.values) \
        & (recorded.values > 0)
    values = np.where(ok, 1.0 / np.where(ok, recorded.values, 1.0), -np.inf)
    name = Path(path).name.removesuffix(".gz").removesuffix(".json")
    return TablePrior(f"recording {name}", configs, values)
