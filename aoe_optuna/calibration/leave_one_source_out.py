"""How well the simulator predicts published timings it was not fitted to.

A fit to every published figure says how well the constants can bend to the
table (the in-sample error); it says little about a kernel timed elsewhere.
Here the fitted constants are refitted with each source left out in turn and
the left-out source is simulated with them (leave-one-source-out, LOSO): a
source is one author's way of timing (tool, warm or cold L2, kernel build),
so its error is what an unseen source can expect. Sweeps (several configs of
one shape from one source) are checked for order: the Spearman correlation of
published and simulated times, and the model's rank of the published best.
``scripts/calibrate_simulator.py --validate`` prints the tables.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from scipy.optimize import least_squares

from aoe_optuna.aicore.pipes import launch, transfer
from aoe_optuna.calibration import residuals as calibration
from aoe_optuna.calibration.published_gemm import (
    CATLASS_GUIDE,
    EX34,
    EX44,
    EX52,
    PUBLISHED,
    RANKING_PAIRS,
    TORCH_NPU,
    Published,
)

# (module, constant, scale to the printed unit, unit) of every fitted constant
FITTED: tuple[tuple[ModuleType, str, float, str], ...] = (
    (transfer, "STREAM_RUN_L2_S", 1e9, "ns"), (transfer, "STREAM_RUN_HBM_S", 1e9, "ns"),
    (transfer, "STREAM_LINE_L2_S", 1e9, "ns"), (transfer, "STREAM_LINE_HBM_S", 1e9, "ns"),
    (transfer, "STREAM_PARTIAL_S", 1e9, "ns"), (transfer, "STREAM_MISALIGNED_S", 1e9, "ns"),
    (launch, "KERNEL_LAUNCH_S", 1e6, "us"), (launch, "MIX_HEAD_S", 1e6, "us"),
    (launch, "HANDOVER_S", 1e6, "us"),
)

# A short name per source for the tables; the full citation stays in published_gemm.py.
SOURCE_TAGS: dict[str, str] = {
    CATLASS_GUIDE: "catlass guide", EX34: "catlass ex34", EX44: "catlass ex44",
    EX52: "catlass ex52", TORCH_NPU: "torch_npu",
}


def tag(figure: Published) -> str:
    return SOURCE_TAGS.get(figure.source, figure.source)


def in_use() -> np.ndarray:
    """The fitted constants now in the modules, in printed units."""
    return np.array([getattr(mod, name) * scale for mod, name, scale, _ in FITTED])


@contextlib.contextmanager
def constants(values: Sequence[float]) -> Iterator[None]:
    """The fitted constants set to ``values`` (printed units) while the block runs."""
    saved = [getattr(mod, name) for mod, name, _, _ in FITTED]
    for (mod, name, scale, _), v in zip(FITTED, values, strict=True):
        setattr(mod, name, float(v) / scale)
    try:
        yield
    finally:
        for (mod, name, _, _), v in zip(FITTED, saved, strict=True):
            setattr(mod, name, v)


def residuals(values: Sequence[float], figures: Sequence[Published]) -> np.ndarray:
    """Log errors of ``figures``, plus a penalty per ranking pair among them out of order."""
    with constants(values):
        rows = calibration.table(tuple(figures))
    by_name = {r.figure.name: r.simulated_us for r in rows}
    ranks = [3.0 * max(0.0, np.log(by_name[a] / by_name[b]) + 0.02)
             for a, b in RANKING_PAIRS if a in by_name and b in by_name]
    return np.array([np.log(r.ratio) for r in rows] + ranks)


def fit(figures: Sequence[Published], start: Sequence[float] | None = None) -> np.ndarray:
    """Least squares on log time of ``figures``: the constants in printed units.

    A constant that none of ``figures`` depends on (misaligned rows when the
    only source with them is left out) cannot be estimated from them: it is
    set to 0, the effect switched off, not left at a value another fit gave
    it, which would leak the left-out source into its own prediction.
    """
    figures = tuple(figures)
    x0 = in_use() if start is None else np.asarray(start, dtype=float)
    seen = identified(figures, x0)
    x = np.where(seen, x0, 0.0)

    def free_residuals(free: np.ndarray) -> np.ndarray:
        x[seen] = free
        return residuals(x, figures)

    result = least_squares(free_residuals, x0[seen], bounds=(0.0, 40.0), diff_step=0.05)
    x[seen] = result.x
    return x.copy()


def identified(figures: Sequence[Published], at: np.ndarray) -> np.ndarray:
    """Which constants move any of ``figures``' residuals (each doubled, plus one unit)."""
    base = residuals(at, figures)
    seen = np.zeros(len(at), dtype=bool)
    for i in range(len(at)):
        moved = at.copy()
        moved[i] = 2.0 * moved[i] + 1.0
        seen[i] = not np.allclose(residuals(moved, figures), base, rtol=0.0, atol=1e-9)
    return seen


@dataclass(frozen=True)
class SourceError:
    """One source's figures against the model: median and worst |ratio - 1|."""

    source: str
    figures: int
    median_error: float
    max_error: float
    within_10: int
    median_ratio: float


def source_error(source: str, rows: Sequence[calibration.Row]) -> SourceError:
    ratio = np.array([r.ratio for r in rows])
    err = np.abs(ratio - 1.0)
    return SourceError(source, len(rows), float(np.median(err)), float(np.max(err)),
                       int(np.sum(err <= 0.10)), float(np.median(ratio)))


def by_source(rows: Sequence[calibration.Row]) -> dict[str, list[calibration.Row]]:
    groups: dict[str, list[calibration.Row]] = {}
    for r in rows:
        groups.setdefault(tag(r.figure), []).append(r)
    return groups


def in_sample(values: Sequence[float],
              figures: Sequence[Published] = PUBLISHED) -> list[SourceError]:
    """Every source's error with constants ``values`` (fitted to all of ``figures``)."""
    with constants(values):
        rows = calibration.table(tuple(figures))
    return [source_error(s, rs) for s, rs in by_source(rows).items()]


def leave_one_source_out(
    figures: Sequence[Published] = PUBLISHED,
) -> list[tuple[SourceError, list[calibration.Row]]]:
    """Each source simulated with the constants fitted to the other sources only."""
    out = []
    for source in dict.fromkeys(tag(f) for f in figures):
        rest = [f for f in figures if tag(f) != source]
        held = tuple(f for f in figures if tag(f) == source)
        with constants(fit(rest)):
            rows = calibration.table(held)
        out.append((source_error(source, rows), rows))
    return out


def pooled_median(rows: Sequence[calibration.Row]) -> float:
    return float(np.median(np.abs(np.array([r.ratio for r in rows]) - 1.0)))


@dataclass(frozen=True)
class Sweep:
    """Configs of one shape timed by one source, and how the model orders them."""

    label: str
    names: tuple[str, ...]
    spearman: float
    best_rank: int  # 1-based rank, in the model, of the published fastest config

    @property
    def size(self) -> int:
        return len(self.names)


def sweeps(rows: Sequence[calibration.Row]) -> list[Sweep]:
    """Every group of >= 2 published configs of one shape, dtype and SoC from one source.

    Library figures (no config) are left out: the model picks their tiling.
    """
    groups: dict[tuple[str, str, int, int, int, str], list[calibration.Row]] = {}
    for r in rows:
        f = r.figure
        if f.config is not None:
            groups.setdefault((tag(f), f.soc, f.m, f.n, f.k, f.dtype), []).append(r)
    from scipy.stats import spearmanr  # here: scipy.stats costs every process ~1 s to import

    out = []
    for (source, soc, m, n, k, dtype), rs in groups.items():
        if len(rs) < 2:
            continue
        pub = np.array([r.figure.published_us for r in rs])
        sim = np.array([r.simulated_us for r in rs])
        rho = float(spearmanr(pub, sim).statistic) if len(rs) > 2 else (
            1.0 if (pub[0] - pub[1]) * (sim[0] - sim[1]) > 0 else -1.0)
        best_rank = int(np.sum(sim < sim[int(np.argmin(pub))])) + 1
        out.append(Sweep(f"{source}: {soc} {m}x{n}x{k} {dtype}",
                         tuple(r.figure.name for r in rs), rho, best_rank))
    return out
