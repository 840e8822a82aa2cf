"""A small recorded space with repeats, and its replay spec, for the race's tests.

Sixteen configs (a, b in 1..4); config (a, b) runs in ``1 + 0.004 * (a + b)`` ms on
average with repeats spread by 2%, so several configs lie within 1% of the best.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def noisy_cache(folder: Path, spread: float = 0.02, repeats: int = 16) -> Path:
    rng = np.random.default_rng(0)
    entries = {}
    for a in range(1, 5):
        for b in range(1, 5):
            mean = 1.0 + 0.004 * (a + b)
            times = (mean * np.exp(rng.normal(0.0, spread, repeats))).tolist()
            entries[f"{a},{b}"] = {"a": a, "b": b, "time": float(np.mean(times)),
                                   "times": times}
    path = folder / "noisy_space.json"
    path.write_text(json.dumps({"tune_params_keys": ["a", "b"],
                                "tune_params": {"a": [1, 2, 3, 4], "b": [1, 2, 3, 4]},
                                "objective": "time", "cache": entries}))
    return path


def race_spec(folder: Path, race: dict | None = None, seed: int = 0) -> Path:
    doc = {"op_name": "tiny", "backend": {"name": "replay", "path": str(noisy_cache(folder)),
                                          "seed": seed}}
    if race is not None:
        doc["race"] = race
    path = folder / "race_spec.json"
    path.write_text(json.dumps(doc))
    return path
