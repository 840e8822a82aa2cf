"""Measuring a kernel set: one budget of measurements over every operator of a serving
mix, each measurement a (config, M) the joint model of its operator asks for.

Per operator: a warm-up of a few configs (the spec's baseline first, then the baseline
with each other choice of a categorical parameter, then uniform feasible ones), each
timed at one tuning shape, spread over the range; then, in rounds,
the model is refitted and :mod:`.acquisition` names the pairs that could cut the mix's
weighted latency most. Candidates are fresh uniform feasible configs, the one-parameter
neighbours of the incumbents (the kernels of the current sets of one and two, the
best measured config at each tuning shape), their re-tilings (both sides of the output
tile changed together, the rest kept), the configs already measured, whose new shapes
are a timing only where the backend keeps its builds (the simulator's charge, the cpu
and npu backends' build caches), and the other operators' leaders (each one's fastest
measured config at each of its tuning shapes). A tiling's fit is its output tiles over
the cores, M and N, far more than K: decode's o_proj and down_proj (both N = 3,584)
have one optimum at batch 16 and one at 120, and down_proj's own search, 116
measurements over a 10-parameter space, stood 15-19% above it at batches of 99 to 206.
Past batch 100 gate_up_proj's best tile follows M (112 x 272 at batch 99, 80 x 400 at
154, 192 x 160 at 178), each filling L0C, so no one-parameter step leads from one to
the next: without the re-tilings, one seed's measured configs stood 4-11% above the
optimum at five of seven held-out batches from 99 to 253. The operators share the
budget by their share of the mix's time, each with a floor (:mod:`.budget_split`): the
one furthest below its quota gets the next round, until its model finds nothing that
could cut the time.

Half of each round checks pairs the current sets ship that no measurement has seen.
With ``verify``, the end of the budget checks the sets' claims first: the (config,
tuning shape) pairs the sets of 1 to 8 kernels ship that no measurement has seen, the
most exposed first (weight x how far above its prediction the latency could be), each
round re-choosing the sets from the refitted model; what is left once every shipped
pair is measured explores as before. It is off by default: the measurements it takes
are the exploration's (docs/benchmarks/kernel_sets.md).

Everything read is recomputed from the operators' studies (:mod:`.measurements`), so
the same call resumes an interrupted run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import optuna

from aoe_optuna.backends.base import BackendBase
from aoe_optuna.kernel_set.acquisition import (
    exposure,
    measured_near,
    pick,
    pick_pairs,
    set_gains,
    shape_weights,
    where_to_measure,
)
from aoe_optuna.kernel_set.budget_split import FLOOR, next_operator, quotas
from aoe_optuna.kernel_set.expected_time import expected_time_s, model_scale
from aoe_optuna.kernel_set.joint_model import JointInputs, JointModel
from aoe_optuna.kernel_set.measurements import OperatorStudy
from aoe_optuna.kernel_set.operator_mix import OperatorMix
from aoe_optuna.kernel_set.selection import K_MAX, KernelSetChoice, choose_sets
from aoe_optuna.samplers.neighbourhood import categorical_flips, neighbours, retilings
from aoe_optuna.spec.loader import StudySpec

WARMUP = 10  # measurements per operator before its model steers
# the share of the warm-up that may be baseline configs with one categorical choice
# changed: prefill seed 3 at 400 measurements drew zN weights only on five poor random
# tilings, and gate_up_proj's model never proposed zN beside a good one (every set 7% off
# the optimum; 1.5% with the flip); decode's sets of 4 at 1,000 moved 0.15 points on the
# mean of nine seeds, the worst 1.0162 -> 1.0158 (docs/benchmarks/kernel_sets.md)
FLIP_SHARE = 0.5
ROUND = 4  # measurements per operator between two fits of its model
POOL = 2000  # fresh uniform feasible candidates per round
INCUMBENTS = 8  # configs whose one-parameter neighbours join the candidates
# the share of the budget, at its end, that checks what the sets ship: none by default,
# since a quarter cost decode's set of 4 0.2-1.1 points on each of five seeds, and
# 0.01-1.6 on four of five with a measurement within 0.6 of a shape in log2 M counted
# as a check there (docs/benchmarks/kernel_sets.md)
VERIFY = 0.0
# how near in log2 M a measurement of a config counts as a check of a pair it ships
CHECK_REACH = 0.0
# the incumbents' re-tilings among the candidates: decode's set of 4 0.08-1.6 points
# better on eight of nine seeds, 0.14 worse on one (docs/benchmarks/kernel_sets.md)
RETILE = True


@dataclass(frozen=True)
class TunerOptions:
    budget: int  # measurements over every operator together
    seed: int = 0
    warmup: int = WARMUP
    round: int = ROUND
    pool: int = POOL
    verify: float = VERIFY
    check_reach: float = CHECK_REACH  # log2 M; 0: only the pair itself checks it
    floor: float = FLOOR  # of an even split, each operator's least share of the budget
    retile: bool = RETILE  # the incumbents' output tiles re-shaped whole are candidates
    round_reach: float = 0.0  # log2 M: check_reach of the checks in each round

    @property
    def explore_until(self) -> int:
        """Measurements after which the budget checks the sets' claims first."""
        return self.budget - int(round(self.budget * self.verify))


class OperatorTuning:
    """One operator: its tuning shapes, study, model and next picks."""

    def __init__(self, op: OperatorMix, tuned: np.ndarray, study: OperatorStudy,
                 spec: StudySpec) -> None:
        self.op = op
        self.tuned = tuned
        self.tuned_weight = shape_weights(op.m, op.weight, tuned)
        self.study = study
        self.space = spec.space
        cores = spec.profile.cube_cores if spec.kernel_runs_on_soc else None
        self.model = JointModel(JointInputs(spec.space, op, cores), model_scale(spec, op))
        self.time_s = float((op.weight * expected_time_s(spec, op)).sum())  # per mean step
        self.baseline = _baseline_row(spec)
        self._fitted_at = -1
        self._settled = False  # the last fit started afresh (see :meth:`settle`)
        self.open = True  # False once no candidate could cut its time

    @property
    def measured(self) -> int:
        return self.study.measured.count

    def design(self, rng: np.random.Generator, flips: int = 0) -> tuple[np.ndarray, int]:
        """The next warm-up pair: the baseline, then the baseline with one categorical
        choice changed (up to ``flips`` of them: what a category does beside good
        tiles), then uniform feasible configs, each at the next tuning shape of a spread
        order (middle, ends, quarters...)."""
        i = self.measured
        order = _spread(len(self.tuned))
        m = int(self.tuned[order[i % len(order)]])
        known = {int(f) for f in self.space.flat_id(np.array(self.study.measured.rows))
                 } if self.study.measured.rows else set()
        known |= self.study.measured.failed
        if self.baseline is not None:
            if i == 0:
                return self.baseline, m
            changed = categorical_flips(self.space, self.baseline)[:flips]
            if i <= len(changed):
                return changed[i - 1], m
        row = self.space.sample_feasible(1, rng, exclude=known)
        return row[0], m

    def refit(self) -> bool:
        """Fit the model to what is measured (once per new measurement); False while
        nothing succeeded."""
        got = self.study.measured
        if not got.latency_s:
            return False
        if self._fitted_at != len(got.latency_s):
            self.model.fit(np.array(got.rows), np.array(got.ms), np.array(got.latency_s))
            self._fitted_at = len(got.latency_s)
            self._settled = False
        return True

    def settle(self) -> bool:
        """The fit a kernel set is chosen from: from the GP's own start, so an interrupted
        and resumed run chooses what one uninterrupted run over the same measurements
        chooses (the fits while measuring are warm-started, path by path); False while
        nothing succeeded."""
        got = self.study.measured
        if not got.latency_s:
            return False
        if not (self._settled and self._fitted_at == len(got.latency_s)):
            self.model.fit(np.array(got.rows), np.array(got.ms), np.array(got.latency_s),
                           fresh=True)
            self._fitted_at = len(got.latency_s)
            self._settled = True
        return True

    def measured_rows(self) -> np.ndarray:
        """The distinct configs measured successfully, in order of first measurement."""
        got = self.study.measured
        if not got.rows:
            return np.zeros((0, len(self.space.names)), dtype=np.int64)
        rows = np.array(got.rows)
        _, first = np.unique(self.space.flat_id(rows), return_index=True)
        return rows[np.sort(first)]

    def proposals(self, rng: np.random.Generator, count: int, pool: int,
                  shared: np.ndarray | None = None, retile: bool = False,
                  reach: float = 0.0) -> list[tuple[np.ndarray, int, float]]:
        """Up to ``count`` (config row, M, what it could cut in s per step) to measure:
        half of them checks of pairs the current sets ship unmeasured, the rest the
        candidates of largest gain (:mod:`.acquisition`); ``shared``: configs the other
        operators found fastest, candidates too."""
        if not self.refit():
            return []
        got = self.study.measured
        done = self.measured_rows()
        done_mean = np.stack([self.model.predict_log(done, int(m))[0] for m in self.tuned],
                             axis=1)
        choices = choose_sets(np.exp(done_mean), self.tuned, self.tuned_weight, K_MAX)
        rows = self._candidates(rng, pool, done, done_mean, choices, shared, retile)
        ids = self.space.flat_id(rows)
        mean = np.empty((len(rows), len(self.tuned)))
        std = np.empty_like(mean)
        measured = np.zeros_like(mean, dtype=bool)
        for j, m in enumerate(self.tuned.tolist()):
            mean[:, j], std[:, j] = self.model.predict_log(rows, int(m))
            measured[:, j] = [(int(f), int(m)) in got.pairs for f in ids]
        # the measured configs lead the candidates, in the order of ``done``
        shipped, sets = _set_terms(choices, self.tuned, np.exp(done_mean), len(rows))
        seen = measured | measured_near(ids, self.tuned, got.pairs, reach) if reach > 0 \
            else measured
        check = pick_pairs(exposure(mean, std, self.tuned_weight, shipped, seen),
                           count // 2 if count > 1 else 0)
        for p in check:  # a pair checked now is no new config's shape
            measured[p.row, p.shape] = True
        best = np.exp(done_mean.min(axis=0))
        new = pick(set_gains(mean, std, sets, self.tuned_weight),
                   where_to_measure(mean, std, best, self.tuned_weight, measured),
                   count - len(check))
        return [(rows[p.row], int(self.tuned[p.shape]), p.gain_s) for p in [*new, *check]]

    def checks(self, count: int, reach: float = 0.0) -> list[tuple[np.ndarray, int, float]]:
        """Up to ``count`` (config row, M, exposure) the sets of 1 to K_MAX kernels ship
        unmeasured, the largest exposure first: a set with its ranges is a claim about
        each tuning shape in them, and these are the ones no measurement has checked
        (none of the config within ``reach`` of the shape in log2 M)."""
        if not self.refit():
            return []
        got = self.study.measured
        done = self.measured_rows()
        mean = np.empty((len(done), len(self.tuned)))
        std = np.empty_like(mean)
        for j, m in enumerate(self.tuned.tolist()):
            mean[:, j], std[:, j] = self.model.predict_log(done, int(m))
        measured = measured_near(self.space.flat_id(done), self.tuned, got.pairs, reach)
        choices = choose_sets(np.exp(mean), self.tuned, self.tuned_weight, K_MAX)
        shipped, _ = _set_terms(choices, self.tuned, np.exp(mean), len(done))
        picks = pick_pairs(exposure(mean, std, self.tuned_weight, shipped, measured), count)
        return [(done[p.row], int(self.tuned[p.shape]), p.gain_s) for p in picks]

    def leaders(self) -> np.ndarray:
        """The distinct configs measured fastest at one of the tuning shapes (by their
        measurements, no model): what this operator offers the others."""
        got = self.study.measured
        if not got.latency_s:
            return np.zeros((0, len(self.space.names)), dtype=np.int64)
        rows, ms, lat = np.array(got.rows), np.array(got.ms), np.array(got.latency_s)
        best = [int(np.flatnonzero(ms == m)[np.argmin(lat[ms == m])]) for m in np.unique(ms)]
        return np.unique(rows[best], axis=0)

    def _candidates(self, rng: np.random.Generator, pool: int, done: np.ndarray,
                    done_mean: np.ndarray, choices: list[KernelSetChoice],
                    shared: np.ndarray | None = None, retile: bool = False) -> np.ndarray:
        """The measured configs (first, in their order), then fresh uniform feasible ones
        and the one-parameter neighbours of the incumbents: the kernels of the sets of
        one and two, then each tuning shape's best, the shapes that carry the most of
        the mix's time first (weight x latency: a prefill of 8,192 tokens weighs 60 of
        128's, a batch of 256 several of 1's, at the same share of the mix)."""
        winner = np.argmin(done_mean, axis=0)
        carried = self.tuned_weight * np.exp(done_mean.min(axis=0))
        heavy_first = np.argsort(-carried, kind="stable")
        lead = [r for c in choices[:2] for r in c.rows] + [int(winner[j]) for j in heavy_first]
        incumbents = done[list(dict.fromkeys(lead))[:INCUMBENTS]]
        got = self.study.measured
        fresh = [self.space.sample_feasible(pool, rng, exclude=set(got.failed)),
                 neighbours(self.space, incumbents)]
        if retile:
            fresh.append(retilings(self.space, incumbents))
        if shared is not None and len(shared):
            fresh.append(shared)
        extra = np.concatenate(fresh)
        ids = self.space.flat_id(extra)
        known = np.concatenate([self.space.flat_id(done),
                                np.fromiter(got.failed, dtype=np.int64, count=len(got.failed))])
        _, first = np.unique(ids, return_index=True)
        first = np.sort(first)
        extra = extra[first[~np.isin(ids[first], known)]]
        return np.concatenate([done, extra])


def _set_terms(choices: list[KernelSetChoice], tuned: np.ndarray, done_latency: np.ndarray,
               candidates: int) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Where the current sets ship each candidate (the measured configs are the first
    candidates, in order), and per set its latency at each tuning shape and the range
    each shape is in."""
    shipped = np.zeros((candidates, len(tuned)), dtype=bool)
    sets = []
    for choice in choices:
        incumbent = np.empty(len(tuned))
        owner = np.empty(len(tuned), dtype=np.int64)
        for i, r in enumerate(choice.ranges):
            inside = (tuned >= r.low) & (tuned <= r.high)
            shipped[r.row, inside] = True
            incumbent[inside] = done_latency[r.row, inside]
            owner[inside] = i
        sets.append((incumbent, owner))
    return shipped, sets


class KernelSetTuner:
    """Spends ``options.budget`` measurements over ``operators``; :meth:`run` resumes."""

    def __init__(self, storage: optuna.storages.BaseStorage, parent: str, spec: StudySpec,
                 operators: Sequence[OperatorMix], tuned: Sequence[np.ndarray],
                 backend: BackendBase, options: TunerOptions,
                 on_event: Callable[[str], None] = lambda line: None) -> None:
        self.spec = spec
        self.backend = backend
        self.options = options
        self.on_event = on_event
        self.units = open_units(storage, parent, spec, operators, tuned)
        self.quota = quotas([u.time_s for u in self.units], options.budget, options.floor)

    @property
    def used(self) -> int:
        return sum(u.measured for u in self.units)

    def run(self) -> None:
        """Measure until the budget is spent (a resumed run continues where it stopped)."""
        o = self.options
        rng = np.random.default_rng([o.seed, self.used])
        while self.used < o.budget:
            cold = [u for u in self.units if u.measured < min(o.warmup, u.space.n_feasible)]
            if cold:
                unit = min(cold, key=lambda u: u.measured)
                self._measure(unit, *unit.design(rng, int(o.warmup * FLIP_SHARE)))
                continue
            if self.used >= o.explore_until and self._check():
                continue
            i = next_operator([u.measured for u in self.units], self.quota,
                              [u.open for u in self.units])
            if i is None:
                self.on_event("no candidate can cut the weighted latency any more: stopped "
                              f"at {self.used} measurements")
                return
            unit = self.units[i]
            shared = [v.leaders() for v in self.units if v is not unit]
            picks = unit.proposals(rng, min(o.round, o.budget - self.used), o.pool,
                                   np.concatenate(shared) if shared else None, o.retile,
                                   o.round_reach)
            if not picks:
                unit.open = False  # its share goes to the others
                continue
            for row, m, _gain in picks:
                self._measure(unit, row, m)
            self._report(unit)

    def _check(self) -> bool:
        """One round of checks, for the operator whose sets ship the most exposed unmeasured
        pair; False when every shipped pair is measured (the budget left explores)."""
        reach = self.options.check_reach
        first = [(u, u.checks(1, reach)) for u in self.units]
        first = [(u, c[0][2]) for u, c in first if c]
        if not first:
            return False
        unit = max(first, key=lambda uc: uc[1])[0]
        for row, m, _exposure in unit.checks(min(self.options.round,
                                                 self.options.budget - self.used), reach):
            self._measure(unit, row, m)
        self._report(unit)
        return True

    def _measure(self, unit: OperatorTuning, row: np.ndarray, m: int) -> None:
        config = unit.space.full_config(unit.space.config(row))
        unit.study.record(row, m, self.backend.measure(config, unit.op.gemm(m)))

    def _report(self, unit: OperatorTuning) -> None:
        got = unit.study.measured
        configs = len(unit.measured_rows())
        self.on_event(f"[{self.used:>5}/{self.options.budget}] {unit.op.label:<28} "
                      f"{got.count:>4} measured, {configs} configs, "
                      f"{got.builds} built")


def open_units(storage: optuna.storages.BaseStorage, parent: str, spec: StudySpec,
               operators: Sequence[OperatorMix], tuned: Sequence[np.ndarray]
               ) -> list[OperatorTuning]:
    """Each operator's study (``<parent>/<op>/<NxK>``, made or loaded) and model."""
    return [OperatorTuning(op, t, OperatorStudy(storage, f"{parent}/{op.label}", spec.space,
                                                {"K": op.K, "N": op.N, "dtype": op.dtype,
                                                 "batch": op.batch,
                                                 "tuning_shapes": t.tolist()}), spec)
            for op, t in zip(operators, tuned, strict=True)]


def _spread(n: int) -> list[int]:
    """0..n-1 in an order that spreads: the middle, the ends, then halving the gaps."""
    order: list[int] = []
    for i in [n // 2, 0, n - 1]:
        if i not in order:
            order.append(i)
    step = n / 4
    while len(order) < n and step >= 0.5:
        for k in np.arange(step, n, 2 * step):
            i = int(round(k))
            if 0 <= i < n and i not in order:
                order.append(i)
        step /= 2
    order += [i for i in range(n) if i not in order]
    return order


def _baseline_row(spec: StudySpec) -> np.ndarray | None:
    """The spec's baseline as an index row of its space, if it is one of its configs."""
    if not spec.baseline:
        return None
    try:
        row = spec.space.index(spec.baseline)
    except (KeyError, ValueError):
        return None
    return row if bool(spec.space.is_feasible(row[None, :])[0]) else None
