"""Attention and vector kernel models against published timings, source by source.

Each published figure (published_layer_ops.py) is simulated as its source
timed it: the kernel at its host's tiling (or its best), warm L2 where the
source timed a loop, and, where calls were dispatched one by one from the
host, never under that host's dispatch floor. The floor is the only number
set from these figures, and it is set per timing host from the figure its
row marks ``fit`` (the source's smallest shape); those rows are left out of
every error below, and so are the ``seen`` rows (a model changed after their
misses were read), which :func:`seen_errors` reports apart. The chip
constants of the models come from hardware widths, msKPP tables, CANN's host
tiling and the GEMM/GEMV fits to other sources, none from the check figures
(the one vector constant read from figures, a padded burst's cycles, comes
from cann-bench's seen rows), so
leaving a source out of a fit changes nothing: each source's held-out error is
the error of its ``check`` rows. ``scripts/validate_layer_ops.py`` prints the
tables; :func:`band_rows` gives the rows error bands are built from.

Only check rows that carry kernel time feed a kernel's band: a user's figure
is the kernel's own time, and a row on its host's dispatch floor checks the
floor, not the kernel.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import median

from aoe_optuna.aicore.attention import decode_attention, mla_attention, prefill_attention
from aoe_optuna.aicore.cann import fia_prefill as cann_fia_prefill
from aoe_optuna.aicore.cann import mla_decode as cann_mla_decode
from aoe_optuna.aicore.cann import rms_norm as cann_rms_norm
from aoe_optuna.aicore.cann import swiglu as cann_swiglu
from aoe_optuna.aicore.vector.vector_ops import default_vector_cost
from aoe_optuna.calibration.published_layer_ops import FIGURES, KINDS, SEEN, LayerOpFigure
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention, cann_default_tiling
from aoe_optuna.workload.vector_ops import KINDS as VECTOR_KINDS
from aoe_optuna.workload.vector_ops import VectorOp

RANK_GAP = 0.15  # published times this far apart make a ranking pair
RISEN = 1.15  # a hosted figure this far above its host's floor carries kernel time


@dataclass(frozen=True)
class Row:
    """One figure, its simulated kernel time and the time as its source timed it."""

    figure: LayerOpFigure
    kernel_us: float
    simulated_us: float

    @property
    def error(self) -> float:
        """|simulated / published - 1|."""
        return abs(self.simulated_us / self.figure.time_us - 1.0)


def kernel_us(figure: LayerOpFigure) -> float:
    """The model's kernel time of ``figure`` (no host), in microseconds."""
    profile = load_profile(figure.soc)
    s = figure.shape
    if figure.kind == "prefill_attention":
        shape = PrefillAttention(batch=s["batch"], q_heads=s["heads"], kv_heads=s["heads"],
                                 head_dim=s["head_dim"], seq_len=s["seq_q"],
                                 causal=s["causal"], dtype_bytes=s["dtype_bytes"],
                                 kv_len=s["seq_kv"])
        if figure.kernel == "cann_fia":  # CANN's fused infer attention: its split
            return cann_fia_prefill.fia_prefill_cost(profile, shape, looped=True).total_s * 1e6
        # PTO's kernel: one Q block per AI core, both vector cores
        tiling = replace(cann_default_tiling(profile, shape), dealing="cyclic")
        cost = prefill_attention.prefill_attention_cost(profile, shape, tiling, looped=True)
        return cost.total_s * 1e6
    if figure.kind == "decode_attention":
        shape = DecodeAttention(**{k: s[k] for k in (
            "batch", "q_heads", "kv_heads", "head_dim", "context", "page_tokens",
            "kv_layout", "dtype_bytes")})
        if figure.tiling == "best":
            return decode_attention.best_tiling(profile, shape)[1].total_s * 1e6
        return decode_attention.default_cost(profile, shape).total_s * 1e6
    if figure.kind == "mla_decode_attention":
        shape = MlaDecodeAttention(**{k: s[k] for k in (
            "batch", "q_heads", "context", "kv_lora_rank", "qk_rope_head_dim",
            "dtype_bytes")})
        if figure.kernel == "cann_fia":  # CANN's fused infer attention: its split and pipeline
            return cann_mla_decode.cann_mla_decode_cost(
                profile, shape, s.get("query_tokens", 1)).total_s * 1e6
        return mla_attention.default_cost(profile, shape).total_s * 1e6  # catlass's template
    if figure.kernel == "cann_rmsnorm":  # CANN's RmsNorm: its host tiling and passes
        return cann_rms_norm.rms_norm_seconds(profile, s["rows"], s["width"], s["dtype"]) * 1e6
    if figure.kernel == "cann_swiglu":  # CANN's SwiGlu: its host tiling and tiles
        return cann_swiglu.swiglu_seconds(profile, s["rows"], s["width"], s["dtype"]) * 1e6
    if figure.kind in VECTOR_KINDS:  # every vector core, the largest tile UB holds
        op = VectorOp(figure.kind, s["rows"], s["width"], s["dtype"])
        return default_vector_cost(profile, op)[1].total_s * 1e6
    raise ValueError(f"{figure.source}: no model for kind {figure.kind!r}")


def host_floors(figures: Sequence[LayerOpFigure]) -> dict[tuple[str, str], float]:
    """Each timing host's dispatch floor: its ``fit`` row's published time."""
    return {(f.source, f.host): f.time_us for f in figures if f.role == "fit" and f.host}


def simulate(figures: Sequence[LayerOpFigure] = FIGURES) -> list[Row]:
    """Every figure simulated as its source timed it."""
    floors = host_floors(figures)
    rows = []
    for f in figures:
        k = kernel_us(f)
        floor = floors.get((f.source, f.host), 0.0) if f.host else 0.0
        rows.append(Row(f, k, max(k, floor)))
    return rows


def checks(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r.figure.role == "check"]


def seen(rows: Sequence[Row]) -> list[Row]:
    """The rows a model was changed after: in-sample figures, reported apart."""
    return [r for r in rows if r.figure.role == SEEN]


def seen_errors(rows: Sequence[Row] | None = None) -> dict[str, list[float]]:
    """Per kernel kind, the |simulated / published - 1| of the ``seen`` figures: how
    close the changed model comes to the figures it was changed after (no band)."""
    rows = simulate() if rows is None else rows
    out: dict[str, list[float]] = {}
    for r in seen(rows):
        out.setdefault(r.figure.kind, []).append(r.error)
    return out


def carries_kernel(row: Row, floors: dict[tuple[str, str], float]) -> bool:
    """Timed on the cores, or published more than :data:`RISEN` x its host's floor
    (decided from the published figure alone, never from the model's guess)."""
    f = row.figure
    return not f.host or f.time_us > RISEN * floors[(f.source, f.host)]


def band_rows(rows: Sequence[Row]) -> list[Row]:
    """The check rows that carry kernel time: those a kernel's error band is taken from."""
    floors = host_floors([r.figure for r in rows])
    return [r for r in checks(rows) if carries_kernel(r, floors)]


def held_out_errors(rows: Sequence[Row] | None = None) -> dict[str, list[float]]:
    """Per kernel kind, the |simulated / published - 1| of every figure that set no
    constant, each predicted with its own source left out of every fit (KINDS keys;
    an empty list where no published figure of that kind was found)."""
    rows = simulate() if rows is None else rows
    out: dict[str, list[float]] = {k: [] for k in KINDS}
    for r in checks(rows):
        out.setdefault(r.figure.kind, []).append(r.error)
    return out


def ranking_pairs(rows: Sequence[Row]) -> tuple[int, int]:
    """(kept, total) over pairs of check figures of one source, kernel and host whose
    published times differ by more than RANK_GAP: does the model order them alike?"""
    kept = total = 0
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for r in checks(rows):
        groups.setdefault((r.figure.source, r.figure.kernel, r.figure.host), []).append(r)
    for group in groups.values():
        for a, b in itertools.combinations(group, 2):
            pa, pb = a.figure.time_us, b.figure.time_us
            if max(pa, pb) < (1.0 + RANK_GAP) * min(pa, pb):
                continue
            total += 1
            kept += (pa < pb) == (a.simulated_us < b.simulated_us)
    return kept, total


@dataclass(frozen=True)
class Summary:
    """One group's figures, median and worst |error|, median ratio."""

    label: str
    figures: int
    median_error: float
    worst_error: float
    median_ratio: float


def summarise(label: str, rows: Sequence[Row]) -> Summary:
    errors = [r.error for r in rows]
    ratios = [r.simulated_us / r.figure.time_us for r in rows]
    return Summary(label, len(rows), median(errors), max(errors), median(ratios))


def by_source(rows: Sequence[Row]) -> list[Summary]:
    """Held-out summary per (source, kernel), check rows only."""
    groups: dict[str, list[Row]] = {}
    for r in checks(rows):
        groups.setdefault(f"{r.figure.source} {r.figure.kernel}", []).append(r)
    return [summarise(k, v) for k, v in groups.items()]
