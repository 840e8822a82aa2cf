"""What a kernel-set run found: per operator the sets of 1 to K kernels and their ranges,
the figure a deployment decides on (weighted latency, or tokens/s of the mix, against
K, with the per-shape limit), and what the exports are made of.

Everything is the model's prediction over every M of the mix, from the configs that
were measured (a set never ships a config that was not built and timed); the limit
is every M served by its own fastest measured config. The prediction a set is chosen
by is one standard deviation of log latency above the mean (:data:`RISK`): the
fastest of a hundred configs by their means is most often one whose mean is too
fast where nothing measured it (the winner's curse), while a pair measured has
little deviation to add.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aoe_optuna.export.catlass_kernel_set import write_catlass_kernel_set
from aoe_optuna.export.from_study import possible_layouts
from aoe_optuna.export.kb_entry import make_entry
from aoe_optuna.export.kb_figure import SHAPE_UNIT
from aoe_optuna.export.kb_store import update_knowledge_base
from aoe_optuna.export.kernel_set_header import (
    DispatchRange,
    OperatorDispatch,
    distinct_kernels,
    write_kernel_set_header,
)
from aoe_optuna.kb_file import gemm_kb_op
from aoe_optuna.kernel_set.operator_mix import OperatorMix
from aoe_optuna.kernel_set.plan import KernelSetPlan
from aoe_optuna.kernel_set.selection import (
    K_MAX,
    KernelSetChoice,
    choose_sets,
    dispatch,
    per_shape_best_s,
)
from aoe_optuna.kernel_set.tuner import OperatorTuning
from aoe_optuna.spec.loader import StudySpec

# standard deviations above the mean of log latency a set is chosen by: on four decode
# seeds (docs/benchmarks/kernel_sets.md) the sets of 4 went from 1.0250, 1.0246, 1.0262
# and 1.0415 of the optimum to 1.0242, 1.0233, 1.0288 and 1.0350
RISK = 1.0


class KernelCountError(ValueError):
    """More kernels asked than an operator has distinct good configs; one line."""


@dataclass(frozen=True)
class OperatorOutcome:
    op: OperatorMix
    study: str
    configs: list[dict[str, Any]]  # the candidates: measured configs (the space's params)
    latency_s: np.ndarray  # (candidates, len(op.m)) predicted
    sets: list[KernelSetChoice]  # K = 1..K_MAX
    limit_s: float  # every M at its fastest candidate

    def best_for(self, k: int) -> KernelSetChoice:
        """The set of at most ``k`` kernels (a fixed-M operator: its one kernel)."""
        return self.sets[min(k, len(self.sets)) - 1]

    def good_configs(self) -> int:
        """Distinct configs the largest set uses: more kernels than that repeat one."""
        return len(self.sets[-1].rows)


def outcomes(units: Sequence[OperatorTuning], k_max: int = K_MAX,
             risk: float = RISK) -> list[OperatorOutcome]:
    return [_outcome(unit, k_max, risk) for unit in units]


def _outcome(unit: OperatorTuning, k_max: int, risk: float) -> OperatorOutcome:
    unit.settle()
    rows = unit.measured_rows()
    latency = unit.model.latency(rows, unit.op.m, risk)
    sets = choose_sets(latency, unit.op.m, unit.op.weight, k_max if unit.op.varies else 1)
    configs = [unit.space.config(r) for r in rows]
    return OperatorOutcome(unit.op, unit.study.study.study_name, configs, latency, sets,
                           per_shape_best_s(latency, unit.op.weight))


@dataclass(frozen=True)
class KRow:
    """One row of the figure: the sets of at most K kernels per operator."""

    k: int
    kernels: int  # distinct kernels over every operator (instantiations to compile)
    weighted_s: float  # GEMM time of the mean step
    limit_s: float
    tokens_per_s: float | None  # of the mix, with its fixed time (None: no model)

    @property
    def over_limit(self) -> float:
        return self.weighted_s / self.limit_s - 1.0


def k_table(results: Sequence[OperatorOutcome], tokens_per_step: float | None,
            fixed_s: float | None, k_max: int = K_MAX) -> list[KRow]:
    limit = sum(r.limit_s for r in results)
    rows = []
    for k in range(1, k_max + 1):
        chosen = [r.best_for(k) for r in results]
        configs = [r.configs[row] for r, c in zip(results, chosen, strict=True) for row in c.rows]
        total = sum(c.weighted_s for c in chosen)
        tps = (tokens_per_step / (fixed_s + total) if tokens_per_step and fixed_s is not None
               else None)
        rows.append(KRow(k, len(distinct_kernels(configs)[0]), total, limit, tps))
    return rows


def check_kernel_count(results: Sequence[OperatorOutcome], k: int) -> None:
    """Refuse ``k`` kernels when no operator whose M varies has that many distinct good
    configs: every set would repeat kernels (an operator with fewer simply uses fewer)."""
    varying = [r for r in results if r.op.varies]
    if not varying:
        return
    most = max(varying, key=lambda r: r.good_configs())
    if most.good_configs() < k:
        raise KernelCountError(
            f"--k {k}: no operator has {k} distinct good configs (the most: "
            f"{most.good_configs()}, {most.op.label}; a set of {K_MAX} uses no more); ask for "
            f"--k {most.good_configs()} or fewer, or measure more (--n-trials)")


def dispatch_tables(results: Sequence[OperatorOutcome], k: int, spec: StudySpec) -> tuple[
        list[dict[str, Any]], list[OperatorDispatch]]:
    """The distinct kernels of the sets of ``k`` and each operator's ranges over them."""
    chosen = [r.best_for(k) for r in results]
    order = [(i, rng.row) for i, c in enumerate(chosen) for rng in c.ranges]
    kernels, index = distinct_kernels([spec.space.full_config(results[i].configs[row])
                                       for i, row in order])
    where = dict(zip(order, index, strict=True))
    ops = [OperatorDispatch(spec.profile.soc, spec.op_name, r.op.dtype, r.op.K, r.op.N,
                            r.op.name, tuple(DispatchRange(x.low, x.high, where[(i, x.row)])
                                             for x in c.ranges))
           for i, (r, c) in enumerate(zip(results, chosen, strict=True))]
    return kernels, ops


def kb_entries(results: Sequence[OperatorOutcome], k: int, spec: StudySpec,
               storage: str | None) -> list[dict[str, Any]]:
    """One knowledge base entry per kernel range of the sets of ``k``: keyed at the M of
    the range the mix runs most, with the range, the TFLOPS of the mix over it and the
    predicted latency at that M."""
    out = []
    for r in results:
        for x in r.best_for(k).ranges:
            inside = (r.op.m >= x.low) & (r.op.m <= x.high)
            m, w, lat = r.op.m[inside], r.op.weight[inside], r.latency_s[x.row, inside]
            anchor = int(np.argmax(w))
            flops = np.array([r.op.gemm(int(v)).flops for v in m])
            tflops = float((w * flops).sum() / (w * lat).sum() / 1e12)
            config = r.configs[x.row]
            layout = str(spec.space.full_config(config).get("layout", "row_major"))
            out.append(make_entry(spec.profile.soc, gemm_kb_op(spec.op_name, r.op.batch),
                                  r.op.dtype, int(m[anchor]), r.op.K, r.op.N, layout, config,
                                  tflops, None,
                                  r.study, storage, objective=SHAPE_UNIT,
                                  latency_us=float(lat[anchor]) * 1e6,
                                  m_range=(x.low, x.high)))
    return out


def planned_kb_entries(operators: Sequence[OperatorMix], spec: StudySpec,
                       parent: str) -> list[dict[str, Any]]:
    """Every key :func:`kb_entries` may write (a kernel's anchor is any M of its
    operator's mix), with its figure, for the check before the first measurement."""
    return [{"soc": spec.profile.soc, "op": gemm_kb_op(spec.op_name, op.batch),
             "dtype": op.dtype, "M": int(m), "K": op.K, "N": op.N, "layout": layout,
             "objective": SHAPE_UNIT, "m_range": [int(m), int(m)],
             "study": f"{parent}/{op.label}"}
            for op in operators for m in op.m for layout in possible_layouts(spec.space)]


def report(results: Sequence[OperatorOutcome], plan: KernelSetPlan, k: int,
           units: Sequence[OperatorTuning]) -> list[str]:
    """The figure (K = 1..K_MAX) and the sets of ``k``, as the command prints them."""
    rows = k_table(results, plan.tokens_per_step, plan.fixed_s)
    lines = table_lines(rows)
    limit = rows[0].limit_s
    lines.append(f"limit: {limit * 1e6:.2f} us/step, every M at its own best measured config "
                 f"(model predictions over the mix of {plan.source})")
    lines.append(f"sets of {k}:")
    for r in results:
        choice = r.best_for(k)
        parts = [f"M {x.low}..{x.high}: {_config_text(r.configs[x.row])}" for x in choice.ranges]
        fewer = len(choice.rows)
        note = (f" ({fewer} kernel{'s' if fewer > 1 else ''}: no other measured config helps)"
                if fewer < k and r.op.varies else "")
        lines.append(f"  {r.op.label}{note}: " + "; ".join(parts))
    used = sum(u.measured for u in units)
    builds = sum(u.study.measured.builds for u in units)
    cost = sum(u.study.measured.cost_s for u in units)
    lines.append(f"measurements: {used} ({builds} built a config, {used - builds} timed a "
                 f"config built before); the backend's cost of them: {cost:.1f} s")
    return lines


def _config_text(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def write_exports(results: Sequence[OperatorOutcome], k: int, spec: StudySpec,
                  storage: str, *, kb: str | None, kb_replace: bool, header: str | None,
                  catlass: str | None) -> list[str]:
    """Write the knowledge base entries, the dispatch header and the catlass file of the
    sets of ``k``; a line for each thing written."""
    lines: list[str] = []
    kernels, ops = dispatch_tables(results, k, spec)
    source = f"{len(kernels)} kernels, sets of {k} per operator"
    if kb is not None:
        entries = kb_entries(results, k, spec, storage)
        merged = update_knowledge_base(kb, lambda held: [held.merge(e, replace=kb_replace)
                                                         for e in entries])
        lines += [f"kb {m.describe()}" for m in merged]
    if header is not None:
        write_kernel_set_header(header, kernels, ops, source)
        lines.append(f"wrote {header}: {len(kernels)} kernels, {len(ops)} operators, "
                     "aoe_ks_dispatch()")
    if catlass is not None:
        write_catlass_kernel_set(catlass, kernels, ops, spec.profile, source)
        lines.append(f"wrote {catlass}: {len(kernels)} catlass instantiations")
    return lines


class OutsideRangesError(ValueError):
    """A mix that runs an M (or an operator) no kernel of the tuned sets serves; one line."""


def on_other_mix(results: Sequence[OperatorOutcome], units: Sequence[OperatorTuning],
                 other: Sequence[OperatorMix], source: str, tokens_per_step: float | None,
                 fixed_s: float | None, k_max: int = K_MAX) -> list[KRow]:
    """The tuned sets (chosen for the run's mix) on ``other``, K = 1..``k_max``: every
    operator of ``other`` must be one of the run's, every M within its ranges."""
    by_key = {r.op.key: (r, u) for r, u in zip(results, units, strict=True)}
    parts: list[tuple[OperatorOutcome, OperatorMix, np.ndarray]] = []
    for op in other:
        if op.key not in by_key:
            raise OutsideRangesError(
                f"--evaluate: {source}: operator {op.label} is not one of the tuned run's "
                f"({', '.join(r.op.label for r in results)})")
        r, unit = by_key[op.key]
        low, high = int(r.op.m[0]), int(r.op.m[-1])
        outside = op.m[(op.m < low) | (op.m > high)]
        if len(outside):
            raise OutsideRangesError(
                f"--evaluate: {source}: M {int(outside[0])} of {op.label} lies outside every "
                f"range of the tuned sets (M {low}..{high}); tune a run for that mix")
        parts.append((r, op, unit.model.latency(unit.measured_rows(), op.m)))
    limit = sum(per_shape_best_s(lat, op.weight) for _, op, lat in parts)
    rows = []
    for k in range(1, k_max + 1):
        total = 0.0
        configs = []
        for r, op, lat in parts:
            choice = r.best_for(k)
            total += float((lat[dispatch(choice.ranges, op.m), np.arange(len(op.m))]
                            * op.weight).sum())
            configs += [r.configs[row] for row in choice.rows]
        tps = (tokens_per_step / (fixed_s + total) if tokens_per_step and fixed_s is not None
               else None)
        rows.append(KRow(k, len(distinct_kernels(configs)[0]), total, limit, tps))
    return rows


def table_lines(rows: Sequence[KRow]) -> list[str]:
    """The figure as the command prints it."""
    with_tps = rows[0].tokens_per_s is not None
    lines = [f"{'K':>2} {'kernels':>7} {'GEMM us/step':>13} {'over limit':>10}"
             + (f" {'tokens/s':>10}" if with_tps else "")]
    for r in rows:
        lines.append(f"{r.k:>2} {r.kernels:>7} {r.weighted_s * 1e6:>13.2f} "
                     f"{r.over_limit:>+10.2%}" + (f" {r.tokens_per_s:>10.2f}" if with_tps else ""))
    return lines
