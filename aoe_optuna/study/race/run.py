"""Running a study's race: contenders chosen, re-timed round by round, stored as taken.

The search's budget is spent first (the race's re-timings are not trials and do not
count against it); then the contenders (:mod:`aoe_optuna.certify.contenders`) are
re-timed in interleaved rounds until :func:`aoe_optuna.certify.race.race_state` says
the race is over or its budget, a share of the search's measurements, cannot pay for
the next round. Each re-timing is written to the study before the next begins, so a
race killed anywhere loses none of them: the same command resumes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial

from aoe_optuna.attrs import ATTR_CUT_SHORT, ATTR_TIMING_US
from aoe_optuna.certify.blocks import own_sigma
from aoe_optuna.certify.contenders import contenders, joiners
from aoe_optuna.certify.race import MIN_ROUNDS, RaceState, next_timings
from aoe_optuna.spec.race import RaceSettings
from aoe_optuna.study.create import measured_results
from aoe_optuna.study.race.lease import take_lease
from aoe_optuna.study.race.outcome import Certified, certified_of, state_of, unraced
from aoe_optuna.study.race.record import RaceRecord
from aoe_optuna.study.run.objective import count_measured
from aoe_optuna.study.trials.fault_points import fault_point

# params, noise draw -> (cost in seconds per token, or None when the run failed; the
# relative standard error its repeats show, or None)
Remeasure = Callable[[Mapping[str, Any], int], tuple[float | None, float | None]]


def run_race(record: RaceRecord, params: Mapping[int, Mapping[str, Any]],
             remeasure: Remeasure, save: Callable[[RaceRecord], None] = lambda r: None,
             reserve: Sequence[tuple[int, float]] = (), max_contenders: int = 0
             ) -> RaceRecord:
    """Re-time ``record``'s contenders until the race is over or its budget cannot pay
    for the rest of the round; ``save`` after every re-timing. ``reserve``: the configs
    measured but not raced, (trial, first cost) best first; those that could still beat
    the leader once its re-timings show its first timing was lucky join the race, up to
    ``max_contenders`` in all (:func:`aoe_optuna.certify.contenders.joiners`)."""
    while True:
        state = state_of(record)
        todo = next_timings(state, {c: record.costs[c] for c in state.active})
        stop = None
        if state.done or not todo:
            stop = "decided"
        elif record.spent + len(todo) > record.budget:
            stop = "budget"
        if stop and _widen(record, state, reserve, max_contenders):
            continue
        if stop == "decided":
            record.done, record.reason = True, state.reason
            break
        if stop == "budget":
            record.done = True
            record.reason = f"the budget of {record.budget} re-timings is spent"
            break
        for c in todo:
            cost, rel_se = remeasure(params[c], record.draw_base + len(record.costs[c]))
            record.add(c, cost, rel_se)
            save(record)
            fault_point("race")
            if cost is None:
                break  # a contender dropped out: the round is another one now
    save(record)
    return record


def _widen(record: RaceRecord, state: RaceState, reserve: Sequence[tuple[int, float]],
           max_contenders: int) -> bool:
    """Let the reserve's configs that could beat the leader join, where the budget pays
    for their catching up and one round more; whether any joined."""
    if state.leader is None or not reserve:
        return False
    waiting = [(t, c) for t, c in reserve if t not in record.costs]
    rounds = max(len(v) for v in record.costs.values())
    left = record.budget - record.spent
    if record.rules.pairs:  # a joiner's first rounds, each beside the leader
        afford = left // MIN_ROUNDS - 1 if rounds else 0
    else:  # a joiner catches up with every round taken, and one round more
        afford = left // (rounds + 1) if rounds else 0
    room = min(max_contenders - len(record.contenders), afford)
    spread = max(record.noise, race_spread(record))
    joined = joiners(record.costs[state.leader], spread, [c for _, c in waiting],
                     record.rules.epsilon, room)
    if joined and not record.rules.pairs:
        # the rivals found slower stay out; the leader and its ties race the joiners
        record.retired += [int(c) for c in state.slower]  # type: ignore[call-overload]
    for i in joined:
        trial, cost = waiting[i]
        record.contenders.append(trial)
        record.first[trial] = cost
        record.costs[trial], record.rel_se[trial] = [], []
        if record.rules.pairs:
            record.joined[trial] = state.next_round
    return bool(joined)


def race_spread(record: RaceRecord) -> float:
    """The relative noise of one re-timing as the race shows it: each contender's spread
    around its own mean, pooled (drift included); 0 before two rounds."""
    sigma, _ = own_sigma([np.log(np.asarray(v)) for v in record.costs.values() if len(v) >= 2])
    return math.expm1(sigma) if math.isfinite(sigma) else 0.0


def new_record(trials: Sequence[FrozenTrial], searched: int, settings: RaceSettings,
               rel_noise: float, earlier: RaceRecord | None) -> RaceRecord | None:
    """The race of a search of ``searched`` measurements (None when its budget cannot
    time even one contender twice)."""
    budget = settings.measurements(searched)
    field = min(settings.contenders, budget // MIN_ROUNDS)
    if field < 1:
        return None
    costs = [1.0 / float(t.value) for t in trials]  # type: ignore[arg-type]
    chosen = [trials[i] for i in contenders(costs, rel_noise, settings.epsilon, field)]
    return RaceRecord(
        after=searched, contenders=[t.number for t in chosen],
        first={t.number: 1.0 / float(t.value) for t in chosen},  # type: ignore[arg-type]
        budget=budget, rules=settings.rules(budget, settings.contenders), noise=rel_noise,
        draw_base=earlier.next_draw_base if earlier is not None else 1,
        earlier=(earlier.spent + earlier.earlier) if earlier is not None else 0)


def measured_noise(trials: Sequence[FrozenTrial]) -> float | None:
    """The median relative standard error of a GEMM's timing over the measured trials
    that kept their repeats (None: none did)."""
    rel = sorted(s["se"] / s["mean"] for t in trials
                 for s in (t.user_attrs.get(ATTR_TIMING_US) or {}).values()
                 if isinstance(s, dict) and s.get("mean") and s.get("se") == s.get("se")
                 and s.get("se") is not None)
    return rel[len(rel) // 2] if rel else None


def race_study(study: optuna.Study, remeasure: Remeasure, settings: RaceSettings,
               timing_noise: float | None, *, stale_after_s: float = 3600.0,
               on_event: Callable[[str], None] = lambda s: None) -> Certified | None:
    """Certify the study's winner: race its contenders, or resume their race, or read
    the race another process holds. ``timing_noise``: the backend's relative noise of
    one measurement (None: noise-free figures, nothing to race). None when the study
    holds no successful measurement."""
    trials = [t for t in measured_results(study) if not t.user_attrs.get(ATTR_CUT_SHORT)
              and t.value is not None and float(t.value) > 0]
    if not trials:
        return None
    searched = count_measured(study.get_trials(deepcopy=False))
    record = RaceRecord.of(study)
    if record is not None and record.after == searched and record.done:
        return certified_of(record)
    known = [n for n in (measured_noise(trials), timing_noise) if n]
    rel_noise = max(known) if known else None  # a timing's own repeats, or more
    if rel_noise is None:
        return unraced(trials, settings.epsilon, "noise-free figures: nothing to race",
                       exact=True)
    if record is None or record.after != searched:
        fresh = new_record(trials, searched, settings, rel_noise, record)
        if fresh is None:
            n = settings.measurements(searched)
            return unraced(trials, settings.epsilon, f"not raced: a budget of {n} "
                           f"re-timing{'' if n == 1 else 's'}", exact=False)
        record = fresh
    mine, holder = take_lease(study, searched, record.heartbeat, stale_after_s)
    stored = RaceRecord.of(study)
    if stored is not None and stored.after == searched:
        record = stored  # what a holder before this one left
    if not mine:
        who = f"{holder.get('host')} pid {holder.get('pid')}" if holder else "another process"
        on_event(f"race: {who} races this study's winners; its record so far follows")
        return certified_of(record) if stored is not None and stored.after == searched \
            else None
    by_number = {t.number: dict(t.params) for t in trials}
    if record.spent:
        on_event(f"race: resuming after {record.spent} of {record.budget} re-timings")
    record = run_race(record, by_number, remeasure, lambda r: r.save(study),
                      reserve(trials, record), settings.contenders)
    return certified_of(record)


def reserve(trials: Sequence[FrozenTrial], record: RaceRecord) -> list[tuple[int, float]]:
    """The measured configs not raced, (trial, first cost) best first."""
    out = [(t.number, 1.0 / float(t.value)) for t in trials  # type: ignore[arg-type]
           if t.number not in record.costs]
    return sorted(out, key=lambda x: (x[1], x[0]))


def stored_certified(study: optuna.Study, settings: RaceSettings,
                     timing_noise: float | None) -> Certified | None:
    """What the study certifies without measuring anything (an export's reading): its
    race of the present search, or, for noise-free figures, the best measurement and
    its ties; None when it holds no race of its present search."""
    trials = [t for t in measured_results(study) if not t.user_attrs.get(ATTR_CUT_SHORT)
              and t.value is not None and float(t.value) > 0]
    if not trials:
        return None
    record = RaceRecord.of(study)
    if record is not None and record.after == count_measured(study.get_trials(deepcopy=False)):
        return certified_of(record)
    if timing_noise is None and measured_noise(trials) is None:
        return unraced(trials, settings.epsilon, "noise-free figures: nothing to race",
                       exact=True)
    return None
