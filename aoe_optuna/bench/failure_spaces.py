"""Recorded spaces made harder the way NPU tuning spaces are: regions that fail, one best config.

A recorded dev space (a Kernel Tuner cache) becomes a new cache file in which

* whole regions fail when measured ("RuntimeFailedConfig"): each region is a
  conjunction of one tile-size value and one vector/block-width value, the way
  a build or run fails beyond the rules we know (a tile that overflows local
  memory at one width). Regions are drawn until ``fail_fraction`` of the
  configs fail; half of them share a tile or width value with the optimum, so
  failures sit next to the best configs, not only in the slow tail;
* the near-optimal set is thinned to one config: every other config within
  ``near`` of the optimum is slowed to 1.06-1.25 x the optimum, so a sampler
  must find that one config to be within 5 %.

The output is a pure function of the source file and ``seed``, so tests and the
regression guard (``aoe-tune bench guard``) rebuild the same space anywhere.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

TILE_WORDS = ("tile", "WG")  # parameter names that set a tile size
WIDTH_WORDS = ("block_size_x", "VW")  # vector / block widths
FAILURE = "RuntimeFailedConfig"
SLOWDOWN = (1.06, 1.25)  # the thinned near-optimal configs land in this band


@dataclass(frozen=True)
class FailureRecipe:
    """How one generated space is made from one dev space."""

    name: str  # the generated file's stem (bench case name)
    source: str  # the dev space's file name (under the spaces folder)
    seed: int
    fail_fraction: float = 0.04
    near: float = 0.05


RECIPES = (
    FailureRecipe("convolution_milo_A4000_failregions", "convolution_milo_A4000.json.gz", 0),
    FailureRecipe("gemm_RTX_3060_laptop_failregions", "gemm_RTX_3060_laptop.json.gz", 0),
)


def generate(source: Path, dest: Path, seed: int, fail_fraction: float = 0.04,
             near: float = 0.05) -> dict[str, Any]:
    """Write the generated cache to ``dest`` (gzip); returns a summary of what changed."""
    doc = json.loads(gzip.decompress(source.read_bytes()) if source.suffix == ".gz"
                     else source.read_bytes())
    rng = np.random.default_rng(seed)
    entries = doc["cache"]
    keys = list(entries)
    times = np.array([e["time"] if isinstance(e["time"], (int, float)) else np.nan
                      for e in entries.values()], dtype=float)
    best = keys[int(np.nanargmin(times))]
    opt = entries[best]
    varying = [k for k in doc["tune_params_keys"] if len(doc["tune_params"][k]) > 1]
    tiles = [k for k in varying if any(w in k for w in TILE_WORDS)]
    widths = [k for k in varying if any(w in k for w in WIDTH_WORDS)]
    if not tiles or not widths:
        raise ValueError(f"{source}: expected tile and width parameters, got {varying}")
    ok = ~np.isnan(times)
    column = {k: np.array([entries[c][k] for c in keys]) for k in tiles + widths}
    failing = np.zeros(len(keys), dtype=bool)
    regions: list[tuple[str, Any, str, Any]] = []
    target = int(round(fail_fraction * ok.sum()))
    for _ in range(1000):
        if failing.sum() >= target:
            break
        t, w = str(rng.choice(tiles)), str(rng.choice(widths))
        tv = rng.choice(doc["tune_params"][t])
        wv = rng.choice(doc["tune_params"][w])
        if len(regions) % 2 == 0:  # next to the optimum: share one of its values
            tv = opt[t] if rng.random() < 0.5 else tv
            wv = opt[w] if tv != opt[t] else wv
        if opt[t] == tv and opt[w] == wv:
            continue  # the optimum itself stays measurable
        hit = (column[t] == tv) & (column[w] == wv) & ok
        new = hit & ~failing
        if not new.any() or new.sum() > 0.6 * target or failing.sum() + new.sum() > 1.5 * target:
            continue
        failing |= hit
        regions.append((t, tv.item() if hasattr(tv, "item") else tv,
                        w, wv.item() if hasattr(wv, "item") else wv))
    thinned = 0
    t_opt = float(opt["time"])
    for i, k in enumerate(keys):
        if failing[i]:
            entries[k]["time"] = FAILURE
        elif ok[i] and k != best and times[i] <= (1 + near) * t_opt:
            entries[k]["time"] = float(t_opt * rng.uniform(*SLOWDOWN))
            thinned += 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(gzip.compress(json.dumps(doc).encode(), mtime=0))
    return {"failed": int(failing.sum()), "of": int(ok.sum()), "regions": regions,
            "thinned": thinned}


def build(recipe: FailureRecipe, spaces: Path, out_dir: Path) -> Path:
    """The generated file of ``recipe`` in ``out_dir`` (made if absent or stale)."""
    dest = out_dir / f"{recipe.name}.json.gz"
    stamp = dest.with_suffix(".recipe")
    want = repr(recipe)
    if not (dest.is_file() and stamp.is_file() and stamp.read_text() == want):
        generate(spaces / recipe.source, dest, recipe.seed, recipe.fail_fraction, recipe.near)
        stamp.write_text(want)
    return dest
