"""The simulator against every published timing: one row per figure, and the summary.

A published kernel with its config is simulated with that config; a library
kernel whose tiling is not published (``config`` None) is compared with the
best config of :func:`library_space`, since a library picks a near-best
tiling. Figures timed in a loop (benchmarks of one GEMM) find their operands
warm in L2 when they fit; catlass's example timings run the kernel once
(cold). ``scripts/calibrate_simulator.py`` prints the table, and a test holds
the summary to its bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from aoe_optuna.aicore.gemm.model import GemmModel
from aoe_optuna.calibration.published_gemm import PUBLISHED, RANKING_PAIRS, Published
from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import Param, to_code
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Gemm

TILES = tuple(range(16, 257, 16))


@dataclass(frozen=True)
class Row:
    """One published figure next to the simulator's."""

    figure: Published
    simulated_us: float
    config: dict[str, int | str]

    @property
    def ratio(self) -> float:
        return self.simulated_us / self.figure.published_us


@cache
def library_space(soc: str, dtype: str) -> SearchSpace:
    """Tiles 16..256 step 16 (L1 K = 4 L0 K), with and without the unit flag."""
    params = [Param.known("tile_m", TILES), Param.known("tile_k", TILES),
              Param.known("tile_n", TILES), Param.known("unit_flag", [0, 1])]
    return SearchSpace(params, hardware_rules(load_profile(soc), dtype))


def simulate(figure: Published) -> Row:
    """The simulator's time for one published figure."""
    library = figure.config is None
    sim = GemmModel(load_profile(figure.soc), warm_l2=library, library_l1=library)
    gemm = Gemm(figure.m, figure.k, figure.n, dtype=figure.dtype)
    if figure.config is None:
        space = library_space(figure.soc, figure.dtype)
        rows = space.all_feasible()
        lat = sim.latency(space.columns(rows), gemm)
        best = int(np.nanargmin(lat))
        return Row(figure, float(lat[best]) * 1e6, space.config(rows[best]))
    cols = {k: np.array([to_code(k, v)]) for k, v in figure.config.items()}
    return Row(figure, float(sim.latency(cols, gemm)[0]) * 1e6, dict(figure.config))


def table(figures: tuple[Published, ...] = PUBLISHED) -> list[Row]:
    return [simulate(f) for f in figures]


def summary(rows: list[Row]) -> dict[str, float]:
    """Median and worst |simulated/published - 1|, and the ranking pairs kept."""
    err = np.abs(np.array([r.ratio for r in rows]) - 1.0)
    by_name = {r.figure.name: r.simulated_us for r in rows}
    pairs = [(a, b) for a, b in RANKING_PAIRS if a in by_name and b in by_name]
    kept = sum(by_name[a] < by_name[b] for a, b in pairs)
    return {"median_error": float(np.median(err)), "max_error": float(np.max(err)),
            "within_10": int(np.sum(err <= 0.10)), "figures": len(rows),
            "pairs_kept": kept, "pairs": len(pairs)}
