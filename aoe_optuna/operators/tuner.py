"""Tuning a workload shape by shape: one study each, one budget, one scheduler.

The tuner is the budget's one writer. It keeps the plan in a parent study
(``<study>``: the spec, the shapes, the budget) and each shape's measurements
in a study of its own (``<study>/<op>/<MxNxK>``), all in one storage, so the
same command resumes the whole run: every quantity the scheduler reads is
recomputed from the studies. Chunks of measurements go to one shape at a
time, measured in this process or by ``--n-workers`` worker processes on that
shape's study (the study's budget guard keeps the count exact and the
workers' claims keep them from measuring one config twice). Workers on other
hosts follow the allocation the tuner writes (:func:`follow_allocation`).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.backends.base import Backend
from aoe_optuna.operators.retime import (
    ROUNDS,
    Candidate,
    Retimed,
    candidates_to_retime,
    retime,
    retime_cost,
)
from aoe_optuna.operators.scheduler import Scheduler, ShapeHistory
from aoe_optuna.operators.shapes import OperatorShape, operator_shapes, shape_spec
from aoe_optuna.operators.warm_start import Donor, seeds_for
from aoe_optuna.samplers.registry import make_sampler
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.loader import StudySpec, spec_from_dict
from aoe_optuna.spec.stored import SPEC_ATTR, store_sampler
from aoe_optuna.study.create import METRIC_NAME, StudyError, enqueue_baseline, load_or_create
from aoe_optuna.study.objective import TuningObjective, is_measured
from aoe_optuna.study.runner import Budget, run_study
from aoe_optuna.study.workers import worker_env

PLAN_ATTR = "operators"  # on the parent study: spec, shapes, budget, scheduler
ALLOCATION_ATTR = "allocation"  # on the parent study: {shape study: measurements it may hold}
DONE_ATTR = "done"  # on the parent study: the budget is spent
CLOSED_ATTR = "closed"  # on the parent study: shape studies whose sampler found nothing new
RETIME_ATTR = "retimed"  # on a shape study: {"trials": [...], "latencies_us": {...}}
WARM_ATTR = "warm_start"  # on an enqueued trial: where its config came from
FIRST_SEEDS = 3  # donors a shape's first chunk starts from
FOLLOW_POLL_S = 1.0
# A chunk whose sampler proposes this many configs in a row with nothing new to measure
# ends, and its shape gets no more chunks: its sampler has run out of ideas.
MAX_IDLE = 100


@dataclass
class TunerOptions:
    budget: int  # measurements in all, re-timing included
    scheduler: Scheduler
    sampler: str = "gp-ucb"
    sampler_kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    warm_start: bool = True
    retime_rounds: int = ROUNDS
    n_workers: int = 1
    devices: list[str] = field(default_factory=list)
    stale_after_s: float | None = None


@dataclass
class ShapeResult:
    """One shape's outcome: its winner and what it cost."""

    shape: OperatorShape
    study_name: str
    measured: int
    retimed: int
    params: dict[str, Any] | None
    trial: int | None  # the winner's trial in the shape's study
    latency_s: float  # re-timed mean where re-timed, else the winner's timing
    interval_s: tuple[float, float]
    first_s: float  # the winner's first timing
    baseline_s: float | None
    roofline_s: float

    @property
    def tflops(self) -> float:
        return 2.0 * self.shape.M * self.shape.K * self.shape.N / self.latency_s / 1e12

    @property
    def roofline_fraction(self) -> float:
        return self.roofline_s / self.latency_s


@dataclass
class OperatorResult:
    parent: str
    shapes: list[ShapeResult]
    used: int  # measurements spent, re-timing included
    tokens_per_s: float  # of the per-shape winners, end to end
    baseline_tokens_per_s: float | None
    roofline_tokens_per_s: float
    trace: list[tuple[int, float]]  # (measurements used, end-to-end tokens/s) after each chunk


class OperatorTuner:
    """Runs one operator-tuning study: ``tuner.run()``; the same call resumes it."""

    def __init__(
        self,
        storage: optuna.storages.BaseStorage,
        storage_url: str,
        parent: str,
        spec: StudySpec,
        options: TunerOptions,
        kb_donors: list[Donor] | None = None,
        on_event: Callable[[str], None] = lambda line: None,
        backend: Backend | None = None,
    ) -> None:
        self.storage = storage
        self.storage_url = storage_url
        self.parent_name = parent
        self.spec = spec
        self.options = options
        self.kb_donors = list(kb_donors or [])
        self.on_event = on_event
        self.backend = backend if backend is not None else make_backend(spec)
        self.shapes = operator_shapes(spec.workload)
        scheduler = options.scheduler
        if hasattr(scheduler, "warmup"):  # a small budget still reaches every shape
            fair = max(1, options.budget // (2 * len(self.shapes)))
            scheduler.warmup = min(scheduler.warmup, fair)
        self.specs = [shape_spec(spec, s) for s in self.shapes]
        self.parent = self._parent_study()
        self.studies = [self._shape_study(s, sp) for s, sp in zip(self.shapes, self.specs,
                                                                     strict=True)]
        self.objectives = [TuningObjective.from_spec(sp, self.backend) for sp in self.specs]
        self.trace: list[tuple[int, float]] = []
        self._baseline_done: set[int] = set()

    # ------------------------------------------------------------------ studies
    def _parent_study(self) -> optuna.Study:
        plan = {"shapes": [{"study": s.study_name(self.parent_name), "M": s.M, "K": s.K,
                            "N": s.N, "dtype": s.dtype, "names": list(s.names),
                            "weight": s.weight} for s in self.shapes]}
        study, _ = load_or_create(self.storage, self.parent_name, self.spec,
                                  self.spec.roofline_tokens_per_s())
        held = study.user_attrs.get(PLAN_ATTR)
        if held is None:
            study.set_user_attr(PLAN_ATTR, plan)
        elif held["shapes"] != plan["shapes"]:
            raise StudyError(f"study {self.parent_name!r} holds another operator plan")
        study.set_user_attr("budget", self.options.budget)
        study.set_user_attr("scheduler", self.options.scheduler.name)
        return study

    def _shape_study(self, shape: OperatorShape, spec: StudySpec) -> optuna.Study:
        study, _ = load_or_create(self.storage, shape.study_name(self.parent_name), spec,
                                  spec.roofline_tokens_per_s())
        o = self.options
        store_sampler(study, o.sampler, o.sampler_kwargs, o.seed)
        study.sampler = make_sampler(o.sampler, space=spec.space, seed=o.seed,
                                     **o.sampler_kwargs)
        return study

    # ------------------------------------------------------------------ state
    def histories(self) -> list[ShapeHistory]:
        closed = set(self.parent.user_attrs.get(CLOSED_ATTR, []))
        out = []
        for shape, spec, study in zip(self.shapes, self.specs, self.studies, strict=True):
            trials = study.get_trials(deepcopy=False)
            curve = best_curve(trials)
            out.append(ShapeHistory(
                weight=shape.weight, roofline_s=shape.gemm.roofline_s(spec.profile),
                best_s=curve, exhausted=(len(curve) >= spec.space.n_feasible
                                         or study.study_name in closed),
            ))
        return out

    def used(self) -> int:
        """Measurements spent so far: every shape's, and their re-timings."""
        return sum(len(h.best_s) for h in self.histories()) + sum(
            int(s.user_attrs.get(RETIME_ATTR, {}).get("cost", 0)) for s in self.studies)

    def retime_reserve(self) -> int:
        """Measurements the re-timing of every shape's current best few would take."""
        total = 0
        for study in self.studies:
            if RETIME_ATTR in study.user_attrs:
                continue
            total += retime_cost(candidates_to_retime(measured_candidates(study)),
                                 self.options.retime_rounds)
        return total

    # ------------------------------------------------------------------ the run
    def run(self) -> OperatorResult:
        self.parent.set_user_attr(DONE_ATTR, False)
        while True:
            histories = self.histories()
            used = sum(h.measured for h in histories)
            left = self.options.budget - used - self.retime_reserve() - self._retimed_cost()
            i = self.options.scheduler.next_shape(histories)
            if i is None or left <= 0:
                break
            want = self._chunk(histories[i])
            n = min(want, left)
            self._seed(i, histories[i].measured == 0, n)
            self._measure(i, histories[i].measured + n)
            after = self.histories()[i]
            if after.measured == histories[i].measured:  # nothing measurable is left here
                self.on_event(f"{self.shapes[i].study_name(self.parent_name)}: no new "
                              "measurement in a chunk; no more chunks for it")
                self._close(i)
                continue
            self._report(i, after)
        self._retime_all()
        self.parent.set_user_attr(DONE_ATTR, True)
        return self.result()

    def _retimed_cost(self) -> int:
        return sum(int(s.user_attrs.get(RETIME_ATTR, {}).get("cost", 0)) for s in self.studies)

    def _chunk(self, history: ShapeHistory) -> int:
        s = self.options.scheduler
        warmup, chunk = getattr(s, "warmup", 8), getattr(s, "chunk", 4)
        if history.measured < warmup:
            return warmup - history.measured
        return chunk * max(self.options.n_workers, 1)

    def _close(self, i: int) -> None:
        """Mark a shape that yields nothing more (its sampler stopped, space exhausted)."""
        closed = set(self.parent.user_attrs.get(CLOSED_ATTR, []))
        closed.add(self.studies[i].study_name)
        self.parent.set_user_attr(CLOSED_ATTR, sorted(closed))

    def _seed(self, i: int, first: bool, n: int) -> None:
        """Enqueue neighbours' winners: a few on a shape's first chunk, then one per chunk."""
        if not self.options.warm_start:
            return
        study = self.studies[i]
        trials = study.get_trials(deepcopy=False)
        tried = [t.params for t in trials if t.params] + [
            t.system_attrs.get("fixed_params", {}) for t in trials if t.state == TrialState.WAITING]
        donors = self._run_donors(i) + self.kb_donors
        limit = min(FIRST_SEEDS if first else 1, max(n - (1 if first else 0), 0))
        for d in seeds_for(self.shapes[i], donors, self.specs[i].space, tried, limit):
            study.enqueue_trial(d.params, user_attrs={WARM_ATTR: d.source})

    def _run_donors(self, i: int) -> list[Donor]:
        """The current winners of the other shapes of this run."""
        out = []
        for j, study in enumerate(self.studies):
            if j == i:
                continue
            best = best_measured(study)
            if best is not None:
                s = self.shapes[j]
                out.append(Donor((s.M, s.K, s.N), dict(best.params), f"shape {s.dims}"))
        return out

    def _measure(self, i: int, target: int) -> None:
        study, budget = self.studies[i], Budget(n_measurements=target)
        self.parent.set_user_attr(ALLOCATION_ATTR, {
            **self.parent.user_attrs.get(ALLOCATION_ATTR, {}), study.study_name: target})
        if i not in self._baseline_done:
            enqueue_baseline(study, self.specs[i])
            self._baseline_done.add(i)
        if self.options.n_workers > 1:
            run_shape_workers(self.storage_url, study.study_name, target, self.options)
        else:
            run_study(study, self.objectives[i], budget, stale_after_s=self.options.stale_after_s,
                      max_idle=MAX_IDLE)

    def _report(self, i: int, h: ShapeHistory) -> None:
        res = self.current_tokens_per_s()
        used = self.used()
        self.trace.append((used, res))
        s = self.shapes[i]
        self.on_event(
            f"[{used:>4}/{self.options.budget}] {s.label:<14} {s.dims:<18} "
            f"{h.measured:>3} measured, best {h.best * 1e6:9.2f} us "
            f"({h.roofline_fraction:.1%} roofline); end to end "
            + (f"{res:.2f} {METRIC_NAME}" if res else "- (a shape has no result yet)"))

    def _retime_all(self) -> None:
        """Re-time every shape's contenders within what is left of the budget; the shapes
        that weigh most in the step first (the reserve was an estimate: the noise band can
        hold more configs after the last chunk than before it)."""
        rounds = self.options.retime_rounds
        left = self.options.budget - self.used()
        histories = self.histories()
        order = sorted(range(len(self.shapes)),
                       key=lambda i: -histories[i].weight * (histories[i].best
                                                            if histories[i].best_s else 0.0))
        for i in order:
            if RETIME_ATTR in self.studies[i].user_attrs:
                continue
            cands = candidates_to_retime(measured_candidates(self.studies[i]))
            cands = cands[:max(left, 0) // rounds] if rounds else []
            self._retime(i, cands)
            left -= retime_cost(cands, rounds)

    def _retime(self, i: int, cands: list[Candidate]) -> None:
        study = self.studies[i]
        spec, gemm = self.specs[i], self.shapes[i].gemm

        def time_again(params: dict[str, Any], draw: int) -> float | None:
            m = self.backend.remeasure(spec.space.full_config(params), gemm, draw)
            return m.latency_s if m.ok else None

        rounds = self.options.retime_rounds
        done = retime(cands, time_again, rounds)
        study.set_user_attr(RETIME_ATTR, {
            "cost": retime_cost(cands, rounds),
            "trials": [r.trial for r in done],
            "latencies_us": {str(r.trial): [round(x * 1e6, 4) for x in r.latencies_s]
                             for r in done},
        })
        if done:
            w = done[0]
            lo, hi = w.interval_s()
            self.on_event(f"re-timed {self.shapes[i].dims}: {len(cands)} configs x {rounds}; "
                          f"trial {w.trial} holds at {w.mean_s * 1e6:.2f} us "
                          f"[{lo * 1e6:.2f}, {hi * 1e6:.2f}] (first timing "
                          f"{w.first_s * 1e6:.2f} us)")

    # ------------------------------------------------------------------ results
    def winners(self) -> list[ShapeResult]:
        out = []
        for shape, spec, study in zip(self.shapes, self.specs, self.studies, strict=True):
            out.append(shape_result(shape, spec, study))
        return out

    def current_tokens_per_s(self) -> float:
        """End-to-end tokens/s of each shape's best so far (0 until every shape has one)."""
        lat: dict[str, float] = {}
        for shape, study in zip(self.shapes, self.studies, strict=True):
            best = best_measured(study)
            if best is None:
                return 0.0
            for name in shape.names:
                lat[name] = trial_latency(best)
        return self.spec.workload.tokens_per_s(lat)

    def result(self) -> OperatorResult:
        shapes = self.winners()
        wl = self.spec.workload
        lat = {n: r.latency_s for r in shapes for n in r.shape.names}
        tps = wl.tokens_per_s(lat) if all(math.isfinite(v) for v in lat.values()) else 0.0
        base = None
        if all(r.baseline_s is not None for r in shapes):
            base = wl.tokens_per_s({n: r.baseline_s for r in shapes for n in r.shape.names})
        return OperatorResult(self.parent_name, shapes, self.used(), tps, base,
                              wl.roofline_tokens_per_s(self.spec.profile), list(self.trace))


# ---------------------------------------------------------------------- trial reading
def trial_latency(trial: FrozenTrial) -> float:
    """A measured single-GEMM trial's latency (s)."""
    lat = trial.user_attrs.get("latency_us") or {}
    return sum(lat.values()) * 1e-6 if lat else math.inf


def best_curve(trials: list[FrozenTrial]) -> list[float]:
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


def best_measured(study: optuna.Study) -> FrozenTrial | None:
    done = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if is_measured(t)]
    return min(done, key=lambda t: (trial_latency(t), t.number)) if done else None


def measured_candidates(study: optuna.Study) -> list[Candidate]:
    out = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if is_measured(t):
            out.append(Candidate(t.number, dict(t.params), trial_latency(t), _study_noise(study)))
    return out


def _study_noise(study: optuna.Study) -> float | None:
    """The relative noise of one timing: the simulator's ``noise`` option, else unknown
    (re-timing then keeps the first timing)."""
    backend = (study.user_attrs.get(SPEC_ATTR) or {}).get("backend", {})
    if backend.get("name") == "simulator":
        return float(backend.get("noise", 0.0)) or None
    return 0.02  # a real timing: the timing policy's precision target (timing.py)


def shape_result(shape: OperatorShape, spec: StudySpec, study: optuna.Study) -> ShapeResult:
    measured = sum(1 for t in study.get_trials(deepcopy=False) if is_measured(t))
    roofline = shape.gemm.roofline_s(spec.profile)
    base = None
    if spec.baseline is not None:
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if all(t.params.get(k) == v for k, v in spec.baseline.items()):
                base = trial_latency(t)
                break
    retimed = study.user_attrs.get(RETIME_ATTR, {})
    order = retimed.get("trials", [])
    best = best_measured(study)
    if best is None:
        return ShapeResult(shape, study.study_name, measured, int(retimed.get("cost", 0)), None,
                           None, math.inf, (math.inf, math.inf), math.inf, base, roofline)
    if order:
        winner = next(t for t in study.get_trials(deepcopy=False) if t.number == order[0])
        times = tuple(x * 1e-6 for x in retimed["latencies_us"][str(winner.number)])
        r = Retimed(winner.number, dict(winner.params), trial_latency(winner), times,
                    _study_noise(study))
    else:
        r = Retimed(best.number, dict(best.params), trial_latency(best), ())
    return ShapeResult(shape, study.study_name, measured, int(retimed.get("cost", 0)),
                       r.params, r.trial, r.mean_s, r.interval_s(), r.first_s, base, roofline)


# ---------------------------------------------------------------------- workers
def run_shape_workers(storage_url: str, study_name: str, target: int,
                      options: TunerOptions) -> None:
    """Measure ``study_name`` up to ``target`` with ``aoe-tune --worker`` processes."""
    args = ["--storage", storage_url, "--study-name", study_name, "--sampler", options.sampler,
            "--sampler-kwargs", json.dumps(options.sampler_kwargs), "--no-progress",
            "--worker", "--n-trials", str(target)]
    if options.stale_after_s is not None:
        args += ["--stale-after", str(options.stale_after_s)]
    procs = []
    for w in range(options.n_workers):
        seed = [] if options.seed is None else ["--seed", str(options.seed + w)]
        procs.append(subprocess.Popen([sys.executable, "-m", "aoe_optuna.cli.main", *args, *seed],
                                      env=worker_env(w, options.devices)))
    for p in procs:
        p.wait()


def follow_allocation(storage: optuna.storages.BaseStorage, parent: str,
                      measure: Callable[[str, int], None], poll_s: float = FOLLOW_POLL_S,
                      max_idle_s: float | None = None) -> int:
    """A worker on another host: measure whichever shape study is below the allocation
    the tuner wrote, until the tuner marks the run done (or nothing came for
    ``max_idle_s``). ``measure(study_name, target)`` runs one chunk. Returns the
    number of chunks joined."""
    joined, idle_since = 0, time.monotonic()
    while True:
        attrs = _load(storage, parent).user_attrs
        if attrs.get(DONE_ATTR):
            return joined
        for name, target in attrs.get(ALLOCATION_ATTR, {}).items():
            trials = _load(storage, name).get_trials(deepcopy=False)
            if sum(1 for t in trials if is_measured(t)) < int(target):
                measure(name, int(target))
                joined += 1
                idle_since = time.monotonic()
        if max_idle_s is not None and time.monotonic() - idle_since > max_idle_s:
            return joined
        time.sleep(poll_s)


def _load(storage: optuna.storages.BaseStorage, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=storage,
                             sampler=optuna.samplers.RandomSampler())


def stored_spec_of(study: optuna.Study) -> StudySpec:
    return spec_from_dict(study.user_attrs[SPEC_ATTR], source=f"<study {study.study_name}>")
