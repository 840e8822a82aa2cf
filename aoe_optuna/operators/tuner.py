"""Tuning a workload operator by operator: one study each, one budget, one scheduler.

The operators are the workload's distinct GEMM shapes and, where the spec
tunes them, its attention (decode or prefill) and vector kernels
(:mod:`.layer_ops`); the tuner drives each one's study through
:class:`.units.OperatorUnit`.

The tuner is the budget's one writer. It keeps the plan in a parent study
(``<study>``: the spec, the shapes, the budget) and each shape's measurements
in a study of its own (``<study>/<op>/<MxNxK>``), all in one storage, so the
same command resumes the whole run: every quantity the scheduler reads is
recomputed from the studies (:mod:`.state`). Chunks of measurements go to one
shape at a time, measured in this process or by worker processes on that
shape's study (:mod:`.workers`); the study's budget guard keeps the count
exact and our samplers' claims keep workers from measuring one config twice.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from aoe_optuna.attrs import (
    ALLOCATION_ATTR,
    CLOSED_ATTR,
    DONE_ATTR,
    PLAN_ATTR,
    RETIME_ATTR,
    SCHEDULER_ATTR,
    WARM_ATTR,
)
from aoe_optuna.backends.base import BackendBase
from aoe_optuna.operators.layer_ops import LayerOperator, layer_operators
from aoe_optuna.operators.npu_layer import untimed
from aoe_optuna.operators.retime import (
    ROUNDS,
    Candidate,
    candidates_to_retime,
    retime,
    retime_cost,
)
from aoe_optuna.operators.scheduler import Scheduler, ShapeHistory
from aoe_optuna.operators.shapes import (
    Operator,
    OperatorShape,
    operator_shapes,
    shape_spec,
    step_latencies,
)
from aoe_optuna.operators.state import (
    RetimeRecord,
    ShapeResult,
    best_curve,
    best_measured,
    measured_candidates,
    shape_result,
    trial_latency,
)
from aoe_optuna.operators.time_spent import run_time_split
from aoe_optuna.operators.units import GemmUnit, LayerUnit, OperatorUnit
from aoe_optuna.operators.warm_start import (
    Donor,
    layer_point,
    seeds_for,
    size_names,
    warm_point,
)
from aoe_optuna.samplers.registry import DEFAULT_SAMPLER
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.loader import StudySpec
from aoe_optuna.study.create import METRIC_NAME, StudyError, load_or_create
from aoe_optuna.study.run.loop import Budget, RunResult
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.session import SamplerRequest, StoredPlan, StudySession, hold_plan
from aoe_optuna.study.trials.fault_points import fault_point
from aoe_optuna.study.trials.recovery import trial_config
from aoe_optuna.workload.step_split import Part, tuned_split

FIRST_SEEDS = 3  # donors a shape's first chunk starts from
NEAR = 1.5  # later chunks take donors this near (log2 size distance): 2.8x in one dimension
# A chunk whose sampler proposes this many configs in a row with nothing new to measure
# ends, and its shape gets no more chunks: its sampler has run out of ideas.
MAX_IDLE = 100
FAILING_CHUNKS = 2  # chunks past warm-up with no successful measurement close a shape


@dataclass
class TunerOptions:
    budget: int  # measurements in all, re-timing included
    scheduler: Scheduler
    sampler: str = DEFAULT_SAMPLER
    sampler_kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    warm_start: bool = True
    retime_rounds: int = ROUNDS
    n_workers: int = 1
    devices: list[str] = field(default_factory=list)
    stale_after_s: float | None = None
    # each worker builds ahead on this many builders (None: build, then time, in turn)
    builders: int | None = None

    @property
    def in_flight(self) -> int:
        """Measurements the run's workers have under way at once."""
        return max(self.n_workers, 1) * ((self.builders or 0) + 1)


@dataclass
class OperatorResult:
    """A run's outcome: each shape's winner and the workload's tokens/s with them."""

    parent: str
    shapes: list[ShapeResult]
    used: int  # measurements spent, re-timing included
    tokens_per_s: float  # of the per-shape winners, end to end (0 while a shape has none)
    baseline_tokens_per_s: float | None
    roofline_tokens_per_s: float
    # GEMMs, attention, vector kernels, communication with the winners' latencies, each
    # with its roofline (empty while an operator has no result)
    split: list[Part] = field(default_factory=list)
    # the times are the simulator's (their error bands apply), not measurements
    simulated: bool = False
    # where the wall-clock went (build, queue, timing...: TimeSplit's items)
    time_split: list[str] = field(default_factory=list)


@dataclass
class Snapshot:
    """All shapes' trials at one moment, and what follows from them."""

    trials: list[list[FrozenTrial]]
    histories: list[ShapeHistory]
    measured: int  # measurements, not counting re-timings
    retimed: int  # measurements spent re-timing
    reserve: int  # what re-timing the present contenders would still cost

    @property
    def used(self) -> int:
        return self.measured + self.retimed


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
        backend: BackendBase | None = None,
        on_chunk: Callable[[OperatorTuner, Snapshot], None] = lambda tuner, snap: None,
    ) -> None:
        self.storage = storage
        self.storage_url = storage_url
        self.parent_name = parent
        self.spec = spec
        self.options = options
        self.kb_donors = list(kb_donors or [])
        self.on_event = on_event
        self.on_chunk = on_chunk
        self.backend = backend if backend is not None else make_backend(spec)
        self.gemm_shapes = operator_shapes(spec.workload)
        self.layer_ops: list[LayerOperator] = layer_operators(spec.workload)
        # on a backend that times them on its device, a kind it cannot time is left out
        # with one line
        self.untimed: list[str] = []
        on_chip = self.backend.layer_kernels == "device"
        if on_chip and self.layer_ops:
            skipped = untimed(self.layer_ops, spec.profile, self.backend.target())
            self.untimed = list(skipped.values())
            self.layer_ops = [op for i, op in enumerate(self.layer_ops) if i not in skipped]
        self.shapes: list[Operator] = [*self.gemm_shapes, *self.layer_ops]
        # a small budget still reaches every shape: warm-ups take at most half of it
        fair = max(1, options.budget // (2 * len(self.shapes)))
        self.scheduler = dataclasses.replace(  # type: ignore[type-var]
            options.scheduler, warmup=min(options.scheduler.warmup, fair))
        self.specs = [shape_spec(spec, s) for s in self.gemm_shapes]  # GEMM shapes only
        self.groups = [shape_group(s, spec) for s in self.shapes]
        self.parent = self._parent_study()
        o = options
        request = SamplerRequest(o.sampler, o.sampler_kwargs, o.seed)
        self.units: list[OperatorUnit] = [
            *(GemmUnit(self._shape_session(s, sp), s)
              for s, sp in zip(self.gemm_shapes, self.specs, strict=True)),
            *(LayerUnit.create(storage, storage_url, parent, op, spec.profile, request,
                               backend=self.backend if on_chip else None,
                               backend_doc=spec.backend, noise=spec.timing_noise)
              for op in self.layer_ops)]
        self.studies = [unit.study for unit in self.units]
        self.noise = [unit.noise for unit in self.units]
        self._baseline_enqueued: set[int] = set()

    # ------------------------------------------------------------------ studies
    def _parent_study(self) -> optuna.Study:
        plan = {"shapes": [s.plan_entry(self.parent_name) for s in self.shapes]}
        study, _ = load_or_create(self.storage, self.parent_name, self.spec,
                                  self.spec.roofline_tokens_per_s())
        hold_plan(study, StoredPlan(PLAN_ATTR, plan, "operator plan"))  # first run's wins
        for key, value in (("budget", self.options.budget),
                           (SCHEDULER_ATTR, self.options.scheduler.name),
                           ("warm_start", self.options.warm_start)):
            study.set_user_attr(key, value)
        return study

    def _shape_session(self, shape: OperatorShape, spec: StudySpec) -> StudySession:
        """A shape's study, opened as every study is; its baseline waits for its first
        chunk (see :meth:`run`)."""
        o = self.options
        return StudySession.open(self.storage_url, spec, shape.study_name(self.parent_name),
                                 SamplerRequest(o.sampler, o.sampler_kwargs, o.seed),
                                 storage=self.storage, backend=self.backend,
                                 enqueue_baseline_now=False)

    # ------------------------------------------------------------------ state
    def snapshot(self) -> Snapshot:
        """Read every shape study once."""
        closed = set(self.parent.user_attrs.get(CLOSED_ATTR, []))
        trials = [s.get_trials(deepcopy=False) for s in self.studies]
        histories, retimed, reserve = [], 0, 0
        for i, ts in enumerate(trials):
            curve = best_curve(ts)
            histories.append(ShapeHistory(
                weight=self.shapes[i].weight,
                roofline_s=self.shapes[i].bound_s(self.units[i].profile),
                best_s=curve, group=self.groups[i],
                exhausted=(len(curve) >= self.units[i].space.n_feasible
                           or self.studies[i].study_name in closed),
            ))
            record = RetimeRecord.of(self.studies[i]) or RetimeRecord()
            retimed += record.cost
            contenders = self._contenders(i, ts)
            if not record.covers(contenders):
                reserve += retime_cost(contenders, self.options.retime_rounds)
        measured = sum(h.measured for h in histories)
        return Snapshot(trials, histories, measured, retimed, reserve)

    def _contenders(self, i: int, trials: Sequence[FrozenTrial]) -> list[Candidate]:
        return candidates_to_retime(measured_candidates(trials, self.noise[i]))

    def used(self) -> int:
        """Measurements spent so far: every shape's, and their re-timings."""
        return self.snapshot().used

    # ------------------------------------------------------------------ the run
    def run(self) -> OperatorResult:
        self.parent.set_user_attr(DONE_ATTR, False)
        snap = self.snapshot()
        if snap.used >= self.options.budget:
            self.on_event(f"{snap.used} measurements already spent of a budget of "
                          f"{self.options.budget}: nothing more to measure")
        while True:
            # re-timing is held back only once every open shape has a result: on a budget
            # too small for both, a first measurement of each shape comes first
            untried = any(not math.isfinite(h.best) and not h.exhausted
                          for h in snap.histories)
            left = self.options.budget - snap.used - (0 if untried else snap.reserve)
            i = self.scheduler.next_shape(snap.histories)
            if i is None or left <= 0:
                break
            h = snap.histories[i]
            # no more than the space has left: a small space (a batch-1 norm has a few
            # dozen tilings) is measured out exactly, not by a sampler proposing repeats
            n = min(self.chunk_size(h), left, self.units[i].space.n_feasible - h.measured)
            if i not in self._baseline_enqueued:  # first, so no seed repeats it
                self.units[i].enqueue_baseline()
                self._baseline_enqueued.add(i)
            self._seed(i, self.studies[i].get_trials(deepcopy=False), first=h.measured == 0,
                       n=n)
            self._measure(i, h.measured + n)
            after = self.snapshot()
            got = after.histories[i]
            if got.measured == h.measured:
                self._close(i, "its sampler proposed nothing new to measure")
            elif (not math.isfinite(got.best)
                  and got.measured >= self.scheduler.warmup
                  + FAILING_CHUNKS * self.scheduler.chunk):
                self._close(i, f"{got.measured} measurements and none succeeded")
            snap = after
            self._report(i, snap)
            self.on_chunk(self, snap)
        self._retime_all()
        self.parent.set_user_attr(DONE_ATTR, True)
        return self.result()

    def chunk_size(self, history: ShapeHistory) -> int:
        """The next chunk's measurements: the warm-up's rest, else the scheduler's chunk
        per worker, or, on builders, as many as the workers have in flight (a smaller
        chunk would leave builders idle)."""
        if history.measured < self.scheduler.warmup:
            return self.scheduler.warmup - history.measured
        return max(self.scheduler.chunk * max(self.options.n_workers, 1),
                   self.options.in_flight if self.options.builders else 0)

    def _close(self, i: int, why: str) -> None:
        """No more chunks for shape ``i`` (recorded, so a resume and followers know)."""
        closed = set(self.parent.user_attrs.get(CLOSED_ATTR, []))
        closed.add(self.studies[i].study_name)
        self.parent.set_user_attr(CLOSED_ATTR, sorted(closed))
        self.on_event(f"{self.studies[i].study_name}: no more chunks: {why}")

    def _seed(self, i: int, trials: Sequence[FrozenTrial], first: bool, n: int) -> None:
        """Enqueue neighbours' winners: a few on an operator's first chunk, then the
        nearest new one per chunk (neighbours of its family: :mod:`.warm_start`)."""
        shape = self.shapes[i]
        if not self.options.warm_start or warm_point(shape) is None:
            return  # a vector kernel: no seeds (see warm_start)
        tried = [c for t in trials if (c := trial_config(t))]
        donors = [d for d in self._run_donors(i) + self.kb_donors if d.dtype == shape.dtype
                  and (first or d.distance(shape) <= NEAR)]
        limit = min(FIRST_SEEDS if first else 1, max(n - (1 if first else 0), 0))
        for d in seeds_for(shape, donors, self.units[i].space, tried, limit):
            self.studies[i].enqueue_trial(d.params, user_attrs={WARM_ATTR: d.source})

    def _run_donors(self, i: int) -> list[Donor]:
        """The current winners of the other operators of this run that take seeds."""
        out = []
        for j, s in enumerate(self.shapes):
            doc = s.warm_doc() if j != i else None
            best = best_measured(self.studies[j].get_trials(deepcopy=False)) if doc else None
            if doc is not None and best is not None:
                family, sizes = layer_point(*doc)
                out.append(Donor(sizes, dict(best.params), f"shape {s.dims}", s.dtype,
                                 family, size_names(doc[1])))
        return out

    def _measure(self, i: int, target: int) -> None:
        study, unit = self.studies[i], self.units[i]
        if unit.followable:
            self._allocate(study.study_name, target)
            fault_point("allocated")  # a test pauses the tuner here for a follower
        result = self.run_chunk(unit, Budget(n_measurements=target))
        if result.failed_workers:
            raise StudyError(f"{study.study_name}: {result.stop_reason}")
        if unit.followable:
            done = sum(1 for t in study.get_trials(deepcopy=False) if is_measured(t))
            self._allocate(study.study_name, done)  # followers: nothing more to do here

    def run_chunk(self, unit: OperatorUnit, budget: Budget) -> RunResult:
        """Measure ``unit``'s study up to ``budget`` through its session (workers and
        builders as the options say)."""
        o = self.options
        return unit.run(budget, n_workers=o.n_workers, devices=o.devices,
                        stale_after_s=o.stale_after_s, max_idle=MAX_IDLE, builders=o.builders)

    def _allocate(self, study_name: str, target: int) -> None:
        allocation = dict(self.parent.user_attrs.get(ALLOCATION_ATTR, {}))
        allocation[study_name] = target
        self.parent.set_user_attr(ALLOCATION_ATTR, allocation)

    def _report(self, i: int, snap: Snapshot) -> None:
        h, s = snap.histories[i], self.shapes[i]
        e2e = self.tokens_per_s(snap)
        self.on_event(
            f"[{snap.used:>4}/{self.options.budget}] {s.label:<14} {s.dims:<18} "
            f"{h.measured:>3} measured, best {h.best * 1e6:9.2f} us "
            f"({h.roofline_fraction:.1%} roofline); end to end "
            + (f"{e2e:.2f} {METRIC_NAME}" if e2e else "- (a shape has no result yet)"))

    # ------------------------------------------------------------------ re-timing
    def _retime_all(self) -> None:
        """Re-time every shape's contenders within what is left of the budget, the shapes
        that weigh most in the step first. The reserve held back while tuning was an
        estimate: the noise band can hold more configs after the last chunk."""
        rounds = self.options.retime_rounds
        snap = self.snapshot()
        left = self.options.budget - snap.used
        order = sorted(range(len(self.shapes)), key=lambda i: -snap.histories[i].weight * (
            snap.histories[i].best if snap.histories[i].best_s else 0.0))
        for i in order:
            record = RetimeRecord.of(self.studies[i]) or RetimeRecord()
            contenders = self._contenders(i, snap.trials[i])
            if record.covers(contenders) or not rounds:
                continue
            contenders = contenders[:max(left, 0) // rounds]
            if contenders:
                self._retime(i, contenders, record)
                left -= retime_cost(contenders, rounds)

    def _retime(self, i: int, contenders: list[Candidate], record: RetimeRecord) -> None:
        unit, start = self.units[i], record.rounds

        def time_again(params: dict[str, Any], draw: int) -> float | None:
            return unit.remeasure(params, start + draw)

        rounds = self.options.retime_rounds
        done = retime(contenders, time_again, rounds)
        for r in done:
            record.latencies_s.setdefault(r.trial, []).extend(r.latencies_s)
        record.cost += retime_cost(contenders, rounds)
        record.rounds += rounds
        record.candidates = [c.trial for c in contenders]
        self.studies[i].set_user_attr(RETIME_ATTR, record.as_attr())
        ranked = record.ranked(contenders)
        if ranked:
            w = ranked[0]
            lo, hi = w.interval_s()
            configs = "config" if len(contenders) == 1 else "configs"
            self.on_event(f"re-timed {self.shapes[i].dims}: {len(contenders)} {configs} x "
                          f"{rounds}; trial {w.trial} holds at {w.mean_s * 1e6:.2f} us "
                          f"[{lo * 1e6:.2f}, {hi * 1e6:.2f}] (first timing "
                          f"{w.first_s * 1e6:.2f} us)")

    # ------------------------------------------------------------------ results
    def tokens_per_s(self, snap: Snapshot) -> float:
        """End-to-end tokens/s of each shape's best first timing, or of the library's
        kernel where that is faster (0 while a shape has no timing)."""
        if not all(math.isfinite(h.best) for h in snap.histories):
            return 0.0
        library = self.library_charges()
        latency = {s.key: min(h.best, library.get(s.key, math.inf))
                   for s, h in zip(self.shapes, snap.histories, strict=True)}
        return self.spec.workload.tokens_per_s(
            step_latencies(self.spec.workload, self.shapes, latency))

    def library_charges(self) -> dict[Any, float]:
        """Per layer operator, what the step charges its calls untuned: the library's
        default kernel as the simulator models it, the one a tuned kernel replaces. Only
        a simulated run compares the two (on the chip the tuned time is measured and the
        charge is a model's)."""
        if not self.spec.exact_model:
            return {}
        charged = {call.name: call.charged_s for call in self.spec.workload.layer_ops}
        return {op.key: max(charged[n] for n in op.names) for op in self.layer_ops
                if all(n in charged for n in op.names)}

    def result(self) -> OperatorResult:
        library = self.library_charges()
        shapes = [dataclasses.replace(shape_result(s, unit), library_s=library.get(s.key))
                  for s, unit in zip(self.shapes, self.units, strict=True)]
        wl = self.spec.workload
        latency = {r.shape.key: r.shipped_s for r in shapes}
        tps, split = 0.0, []
        if all(math.isfinite(v) for v in latency.values()):
            won = step_latencies(wl, self.shapes, latency)
            tps, split = wl.tokens_per_s(won), tuned_split(wl, self.spec.profile, won)
        base = None
        if all(r.baseline_s is not None and math.isfinite(r.baseline_s) for r in shapes):
            base = wl.tokens_per_s(step_latencies(
                wl, self.shapes, {r.shape.key: r.baseline_s for r in shapes}))
        simulated = self.spec.exact_model
        spent = run_time_split([s.get_trials(deepcopy=False) for s in self.studies], simulated)
        return OperatorResult(self.parent_name, shapes, self.used(), tps, base,
                              self.roofline_tokens_per_s(), split, simulated=simulated,
                              time_split=spent.items())

    def roofline_tokens_per_s(self) -> float:
        """Every operator at its roofline, attention and vector kernels included (their
        charge in the workload's fixed time is a default tiling's, not a bound)."""
        p = self.spec.profile
        return self.spec.workload.tokens_per_s(step_latencies(
            self.spec.workload, self.shapes, {s.key: s.roofline_s(p) for s in self.shapes}))


def shape_group(shape: Operator, spec: StudySpec) -> str:
    """Operators whose roofline fractions are comparable: GEMMs of one dtype on one side
    of the ridge; attention of one dtype; vector kernels of one dtype."""
    return shape.group(spec.profile)


__all__ = ["OperatorResult", "OperatorTuner", "ShapeResult", "Snapshot", "TunerOptions",
           "best_measured", "shape_group", "trial_latency"]
