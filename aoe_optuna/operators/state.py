"""What a shape's study holds, read back from storage: the tuner keeps no state of its own.

Everything the scheduler and the results need (the best-so-far curve, the
candidates for re-timing, the re-timing already done, the winner) is
recomputed from the trials and the study's attributes, so a resumed run, a
second host or the dashboard sees the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_LATENCY_US, ENV_ATTR, RETIME_ATTR
from aoe_optuna.operators.retime import Candidate, Retimed, candidates_to_retime
from aoe_optuna.operators.shapes import Operator
from aoe_optuna.operators.units import OperatorUnit
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.study.run.objective import is_measured


def trial_latency(trial: FrozenTrial) -> float:
    """A measured single-GEMM trial's latency (s); inf for a failed one."""
    lat = trial.user_attrs.get(ATTR_LATENCY_US) or {}
    return sum(lat.values()) * 1e-6 if lat else math.inf


def best_curve(trials: Sequence[FrozenTrial]) -> list[float]:
    """Best latency after each measurement, in trial order (inf before the first success)."""
    out: list[float] = []
    best = math.inf
    for t in sorted(trials, key=lambda t: t.number):
        if not is_measured(t):
            continue
        if t.state == TrialState.COMPLETE:
            best = min(best, trial_latency(t))
        out.append(best)
    return out


def best_measured(trials: Sequence[FrozenTrial]) -> FrozenTrial | None:
    """The measured trial with the lowest first timing (lowest number among equals)."""
    done = [t for t in trials if t.state == TrialState.COMPLETE and is_measured(t)]
    return min(done, key=lambda t: (trial_latency(t), t.number)) if done else None


def timing_noise(spec: StudySpec) -> float | None:
    """Relative noise of one timing: the backend says (:meth:`BackendBase.timing_noise`)."""
    return spec.timing_noise


def measured_candidates(trials: Sequence[FrozenTrial], noise: float | None) -> list[Candidate]:
    """Every successful measurement as a re-timing candidate."""
    return [Candidate(t.number, dict(t.params), trial_latency(t), noise)
            for t in trials if t.state == TrialState.COMPLETE and is_measured(t)]


@dataclass
class RetimeRecord:
    """The re-timings a shape's study holds: which trials, how many rounds, what they cost."""

    cost: int = 0
    rounds: int = 0  # noise draws used so far (the next race starts after them)
    candidates: list[int] = field(default_factory=list)  # the set last raced
    latencies_s: dict[int, list[float]] = field(default_factory=dict)  # of the last race
    ties: list[int] = field(default_factory=list)  # within epsilon of the winner, or open
    pcs: float | None = None  # P(correct selection within epsilon), lower bound
    reason: str = ""  # why the last race stopped

    @classmethod
    def of(cls, study: optuna.Study) -> RetimeRecord | None:
        raw: Any = study.user_attrs.get(RETIME_ATTR)
        if not isinstance(raw, dict):
            return None
        pcs = raw.get("pcs")
        return cls(int(raw.get("cost", 0)), int(raw.get("rounds", 0)),
                   [int(x) for x in raw.get("candidates", [])],
                   {int(k): [x * 1e-6 for x in v]
                    for k, v in raw.get("latencies_us", {}).items()},
                   [int(x) for x in raw.get("ties", [])],
                   None if pcs is None else float(pcs), str(raw.get("reason", "")))

    def as_attr(self) -> dict[str, Any]:
        return {"cost": self.cost, "rounds": self.rounds, "candidates": self.candidates,
                "latencies_us": {str(k): [round(x * 1e6, 4) for x in v]
                                 for k, v in self.latencies_s.items()},
                "ties": self.ties, "pcs": self.pcs, "reason": self.reason}

    def covers(self, candidates: Sequence[Candidate]) -> bool:
        """Whether this record already re-timed exactly these contenders."""
        return sorted(c.trial for c in candidates) == sorted(self.candidates)

    def ranked(self, candidates: Sequence[Candidate]) -> list[Retimed]:
        """The recorded contenders with all their re-timings, best (lowest mean) first."""
        out = [Retimed(c.trial, dict(c.params), c.latency_s,
                       tuple(self.latencies_s.get(c.trial, ())), c.spread)
               for c in candidates if c.trial in self.candidates
               and self.latencies_s.get(c.trial)]
        # the race's winner is the candidate timed in its every round (its leader)
        most = max((len(r.latencies_s) for r in out), default=0)
        return sorted(out, key=lambda r: (len(r.latencies_s) < most, r.mean_s, r.trial))


def stored_us(seconds: float) -> float:
    """A latency as a trial stores it (``objective.py``): microseconds, 3 decimals."""
    return round(seconds * 1e6, 3)


@dataclass
class ShapeResult:
    """One shape's outcome: its winner, what the winner runs at, and what it cost."""

    shape: Operator
    study_name: str
    measured: int
    retimed: int
    params: dict[str, Any] | None
    trial: int | None  # the winner's trial in the shape's study
    latency_s: float  # the re-timed mean where re-timed, else the winner's first timing
    interval_s: tuple[float, float]
    first_s: float  # the winner's first timing
    baseline_s: float | None  # the baseline config's timing (one unselected timing)
    roofline_s: float
    # what the step charges a call of this operator without tuning (the library's own
    # kernel at its default, for attention and the vector kernels of a simulated run);
    # None where nothing is charged to compare with (GEMMs, a run on the chip)
    library_s: float | None = None
    # the race's verdict: configs tied with the winner (or not separated from it), a
    # lower bound on P(correct selection), and where the shape's study measured
    tie_params: list[dict[str, Any]] = field(default_factory=list)
    pcs: float | None = None
    env: dict[str, str] | None = None

    @property
    def library_kept(self) -> bool:
        """Whether the library's default kernel is faster than the tuned winner, compared
        as trials store latencies (to the nanosecond: a tie is the tuned kernel's): the run
        then ships the library's (no kernel, its time in the step)."""
        return (self.library_s is not None
                and stored_us(self.library_s) < stored_us(self.latency_s))

    @property
    def shipped_s(self) -> float:
        """The latency of what the run ships for this operator: the tuned winner, or the
        library's default kernel where that is faster."""
        if self.library_s is not None and self.library_kept:
            return self.library_s
        return self.latency_s

    @property
    def tflops(self) -> float:
        """The winner's TFLOPS; nan for a kernel whose FLOPs say nothing (vector)."""
        flops = self.shape.flops()
        return math.nan if flops is None else flops / self.latency_s / 1e12

    @property
    def roofline_fraction(self) -> float:
        return self.roofline_s / self.latency_s


def shape_result(shape: Operator, unit: OperatorUnit) -> ShapeResult:
    """The winner of an operator's study: the best re-timed contender when the re-timing
    covers the present contenders, else the best first timing."""
    study = unit.study
    trials = study.get_trials(deepcopy=False)
    measured = sum(1 for t in trials if is_measured(t))
    base = unit.baseline_trial()
    record = RetimeRecord.of(study) or RetimeRecord()
    roofline = shape.roofline_s(unit.profile)
    baseline_s = None if base is None else trial_latency(base)
    best = best_measured(trials)
    if best is None:
        return ShapeResult(shape, study.study_name, measured, record.cost, None, None,
                           math.inf, (math.inf, math.inf), math.inf, baseline_s, roofline)
    candidates = measured_candidates(trials, unit.noise)
    ranked = record.ranked(candidates)
    raced = bool(ranked) and record.covers(candidates_to_retime(candidates))
    # not raced, or new contenders since: the best first timing, as measured
    won = ranked[0] if raced else Retimed(best.number, dict(best.params), trial_latency(best),
                                          ())
    params = {t.number: dict(t.params) for t in trials}
    ties = [params[t] for t in record.ties if t in params and t != won.trial] if raced else []
    env = study.user_attrs.get(ENV_ATTR)
    return ShapeResult(shape, study.study_name, measured, record.cost, won.params, won.trial,
                       won.mean_s, won.interval_s(), won.first_s, baseline_s, roofline,
                       tie_params=ties, pcs=record.pcs if raced else None,
                       env=env if isinstance(env, dict) else None)
