"""Calibrate half of each published source's figures of one kernel family, predict the rest.

Usage: python scripts/calibration_splits.py [--seed N] [--splits N]   (default 120 halves)

Each source is a user's chip: seeded random halves of its figures of each family it
timed (four figures or more) are fitted as ``aoe-tune calibrate`` fits them, and the
other half is predicted (aoe_optuna.calibration.family_splits). A GEMM source runs on
its leave-one-source-out fold (the constants bands.json stores: the model that never
saw it); the attention models have no constant fitted to any figure, the vector models
one (a padded burst's cycles, from cann-bench's seen rows). Prints
the table docs/benchmarks/calibration.md quotes.
"""

from __future__ import annotations

import argparse
import platform
from datetime import UTC, datetime
from importlib import metadata

import numpy as np

from aoe_optuna.calibration import layer_ops_validation, leave_one_source_out
from aoe_optuna.calibration.bands import shipped_document
from aoe_optuna.calibration.families import family_of
from aoe_optuna.calibration.family_splits import MIN_FIGURES, Figures, family_splits, markdown
from aoe_optuna.calibration.held_out import GEMM_VALIDATION
from aoe_optuna.calibration.published_gemm import PUBLISHED
from aoe_optuna.calibration.residuals import simulate


def gemm_figures() -> list[Figures]:
    """Each GEMM source's figures per family, simulated with the fold that left it out."""
    out = []
    folds = [f for f in shipped_document()["folds"] if f["validation"] == GEMM_VALIDATION]
    for fold in folds:
        figures = [f for f in PUBLISHED if leave_one_source_out.tag(f) == fold["source"]]
        with leave_one_source_out.constants(fold["constants"]):
            model = np.array([simulate(f).simulated_us for f in figures])
        out += _by_family(fold["source"], [family_of(f.config) for f in figures], model,
                          np.array([f.published_us for f in figures]))
    return out


def layer_figures() -> list[Figures]:
    """Each attention and vector source's kernel-carrying figures (checks and seen rows
    alike: a calibration needs no held-out figure), per kernel and family."""
    rows = layer_ops_validation.simulate()
    floors = layer_ops_validation.host_floors([r.figure for r in rows])
    kept = [r for r in rows if r.figure.role != "fit"
            and layer_ops_validation.carries_kernel(r, floors)]
    out = []
    for source in dict.fromkeys(f"{r.figure.source} {r.figure.kernel}" for r in kept):
        mine = [r for r in kept if f"{r.figure.source} {r.figure.kernel}" == source]
        out += _by_family(source, [r.figure.kind for r in mine],
                          np.array([r.simulated_us for r in mine]),
                          np.array([r.figure.time_us for r in mine]))
    return out


def _by_family(source: str, families: list[str], model: np.ndarray,
               published: np.ndarray) -> list[Figures]:
    out = []
    for family in dict.fromkeys(families):
        mine = np.array([f == family for f in families])
        if mine.sum() >= MIN_FIGURES:
            out.append(Figures(source, family, model[mine], published[mine]))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--splits", type=int, default=120)
    args = p.parse_args()
    results = [family_splits(f, args.seed, args.splits) for f in gemm_figures() + layer_figures()]
    versions = ", ".join(f"{n} {metadata.version(n)}" for n in ("numpy", "scipy"))
    print(f"{datetime.now(UTC).date().isoformat()}, Python {platform.python_version()}, "
          f"{versions}; seed {args.seed}, {args.splits} splits a family")
    print("\n".join(markdown(results)))


if __name__ == "__main__":
    main()
