"""Re-checking a knowledge base where it will be used: entries measured elsewhere re-timed.

An entry is stamped with where it was measured (the project's version and what its
backend's timings depend on: compiler and CPU, or CANN, driver, firmware and card;
:func:`aoe_optuna.study.create.environment_stamp`). A toolkit or driver upgrade can
make a tuned winner stale without a word. ``aoe-tune recheck`` re-times each GEMM
shape entry whose stamp differs from this machine's: its winner and the configs tied
with it, raced as a study races its winners (:mod:`aoe_optuna.study.race`). The entry
then holds this machine's figure and stamp; its config stays when it holds (it is the
new winner or ties with it) and changes when a tied config now beats it beyond
epsilon. A winner that no longer builds or runs leaves its entry as it was.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from aoe_optuna.backends.base import BackendBase
from aoe_optuna.certify.race import MAX_ROUNDS, winner_interval
from aoe_optuna.export.kb_entry import (
    describe_key,
    entry_key,
    entry_stamp,
    is_gemm_entry,
    validate_entry,
)
from aoe_optuna.export.kb_figure import SHAPE_UNIT
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.study.race.outcome import certified_of, floor_of
from aoe_optuna.study.race.record import RaceRecord
from aoe_optuna.study.race.run import run_race
from aoe_optuna.study.run.objective import Evaluator
from aoe_optuna.workload.gemm import Gemm, Workload

Verdict = Literal["current", "held", "changed", "could not build", "skipped"]


@dataclass(frozen=True)
class Rechecked:
    """What the recheck made of one entry: the verdict, its line, the entry to store."""

    verdict: Verdict
    line: str
    held: dict[str, Any]
    new: dict[str, Any] | None = None  # None: the entry stays as it is


def stamp_change(old: dict[str, str] | str, new: Mapping[str, str]) -> str:
    """How two stamps differ, in words: ``compiler: gcc 11 -> gcc 12``."""
    if isinstance(old, str):
        return f"stamp {old} -> this machine's"
    keys = [k for k in {**old, **new} if old.get(k) != new.get(k)]
    return "; ".join(f"{k}: {old.get(k, '-')} -> {new.get(k, '-')}" for k in keys)


def why_not(entry: Mapping[str, Any], spec: StudySpec) -> str | None:
    """Why this spec's backend cannot re-time ``entry`` (None: it can)."""
    if not is_gemm_entry(entry):
        return f"a {entry.get('kind')} kernel's entry; only GEMM shapes are re-timed"
    if entry.get("objective") != SHAPE_UNIT:
        return ("the value is a step's tokens/s, not the shape's own figure: re-run its "
                "study (aoe-tune --storage ... --study-name ...) to race it again")
    if entry["soc"] != spec.profile.soc:
        return f"measured for {entry['soc']}; the spec's SoC is {spec.profile.soc}"
    return None


def recheck_entry(entry: dict[str, Any], spec: StudySpec, backend: BackendBase,
                  stamp: dict[str, str]) -> Rechecked:
    """Re-time one entry on ``backend`` when its stamp is not ``stamp``."""
    key = describe_key(entry_key(entry))
    old = entry_stamp(entry)
    if old == stamp:
        return Rechecked("current", f"current {key}: measured under this machine's stamp",
                         entry)
    why = why_not(entry, spec)
    if why is not None:
        return Rechecked("skipped", f"skipped {key}: {why}", entry)
    gemm = Gemm(entry["M"], entry["K"], entry["N"], entry["dtype"], name=entry["op"])
    evaluator = Evaluator(Workload(f"recheck {key}", (gemm,), tokens_per_step=1), backend,
                          None)
    configs = [dict(entry["config"]), *(dict(t) for t in entry.get("ties") or [])]

    def full(config: Mapping[str, Any]) -> dict[str, Any]:
        return spec.space.full_config(config)

    probe = evaluator.remeasure(full(configs[0]), 1)
    if not probe.ok:
        return Rechecked("could not build", f"could not build {key}: {probe.failure_kind}: "
                         f"{probe.reason.splitlines()[0][:300] if probe.reason else ''}; "
                         "the entry is kept as it was", entry)

    def remeasure(config: Mapping[str, Any], draw: int) -> tuple[float | None, float | None]:
        ev = evaluator.remeasure(full(config), draw)
        return (1.0 / ev.tokens_per_s if ev.ok else None), ev.rel_se

    n = len(configs)
    record = RaceRecord(after=0, contenders=list(range(n)),
                        first={i: 1.0 / probe.tokens_per_s for i in range(n)},
                        budget=MAX_ROUNDS * n, rules=spec.race.rules(MAX_ROUNDS * n, n))
    record.add(0, 1.0 / probe.tokens_per_s, probe.rel_se)  # the probe: its first round
    record = run_race(record, dict(enumerate(configs)), remeasure)
    won = certified_of(record)
    assert won is not None
    keep = won.winner == 0 or 0 in won.tie_set
    chosen = 0 if keep else won.winner
    others = [record.costs[c] for c in record.contenders if c != chosen]
    mean, lo, hi = winner_interval(record.costs[chosen], record.rules.confidence,
                                   floor_of(record), others)
    tflops = gemm.flops / mean / 1e12
    new = dict(entry)
    new.update(config=configs[chosen], value=round(tflops, 4),
               latency_us=round(mean * 1e6, 4),
               latency_interval_us=[round(lo * 1e6, 4), round(hi * 1e6, 4)],
               interval=[float(f"{gemm.flops / hi / 1e12:.6g}"),
                         float(f"{gemm.flops / lo / 1e12:.6g}")],
               ties=[configs[c] for c in won.tie_set if c != chosen],
               pcs=round(won.pcs, 4) if won.pcs is not None else None,
               race_measurements=record.spent, env=dict(stamp),
               date=datetime.now(UTC).isoformat(timespec="seconds"))
    new = validate_entry(new)
    was = f"{float(entry['value']):.6g}"
    figure = (f"{new['value']:.6g} TFLOPS [{new['interval'][0]:.6g}, {new['interval'][1]:.6g}]"
              f" (was {was}); {record.spent} re-timings; {stamp_change(old, stamp)}")
    if keep:
        return Rechecked("held", f"held {key}: {_config_text(configs[0])} at {figure}",
                         entry, new)
    return Rechecked("changed", f"changed {key}: {_config_text(configs[0])} -> "
                     f"{_config_text(configs[chosen])} at {figure}", entry, new)


def recheck(entries: list[dict[str, Any]], spec: StudySpec, backend: BackendBase,
            stamp: dict[str, str]) -> Iterator[Rechecked]:
    for entry in entries:
        yield recheck_entry(entry, spec, backend, stamp)


def _config_text(config: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())
