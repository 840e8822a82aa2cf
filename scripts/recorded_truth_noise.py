#!/usr/bin/env python
"""How finely a recorded space's own figures can rank its best configs.

For each recorded space: the standard error of a config's recorded mean over its
repeats (``times``: the median over the space's 20 best configs, relative), and how
many configs lie within 0.5% and 1% of the best recorded time. A replayed
measurement is the mean of as many draws from those repeats as were recorded, so one
re-timing carries the same error; where it is larger than a bar ("within 0.5% of the
best"), a race of a few re-timings cannot resolve the configs under the bar.

    python scripts/recorded_truth_noise.py [../shared/spaces/*.json.gz]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from aoe_optuna.backends.replay.backend import load_recorded

TOP = 20


def main(paths: list[str]) -> None:
    print("| space | repeats | SE of a best-20 config's recorded mean | within 0.5% of the "
          "best | within 1% | configs |")
    print("|---|---|---|---|---|---|")
    for path in paths:
        rec = load_recorded(Path(path))
        ok = np.isfinite(rec.values) & (rec.n_repeats > 1)
        if not ok.any():
            print(f"| {Path(path).name} | none | – | – | – | {len(rec.values)} |")
            continue
        idx = np.flatnonzero(ok)
        values = rec.values[idx]
        best = values.min()
        top = idx[np.argsort(values)[:TOP]]
        rel_se = [np.nanstd(rec.repeats[i, :rec.n_repeats[i]], ddof=1)
                  / np.sqrt(rec.n_repeats[i]) / rec.values[i] for i in top]
        name = Path(path).name.removesuffix(".gz").removesuffix(".json")
        print(f"| {name} | {int(np.median(rec.n_repeats[top]))} | "
              f"{100 * float(np.median(rel_se)):.2f}% | {int((values <= best * 1.005).sum())} | "
              f"{int((values <= best * 1.01).sum())} | {len(values)} |")


if __name__ == "__main__":
    default = sorted(str(p) for p in (Path(__file__).resolve().parents[2] / "shared"
                                      / "spaces").glob("*.json.gz"))
    main(sys.argv[1:] or default)
