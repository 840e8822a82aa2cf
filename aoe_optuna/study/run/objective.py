"""The Optuna objective: suggest a config, check it, measure it, return tokens/s.

Three outcomes per trial, so every sampler gets honest information:

* infeasible (breaks a known rule): never measured; the trial is PRUNED with
  every rule's constraint value set (Optuna's TPE ranks such trials by how far
  they are from feasible) and the violated rules as a user attribute. It does
  not count against the measurement budget.
* failed measurement (build error, crash, hang, wrong result, too much
  quantization error): a FAIL trial with the failure's kind and message.
* success: COMPLETE with tokens/s as the value.

A result is written attribute by attribute (Optuna's storage API has no
batch write), ``measured`` last: a trial carries ``measured`` only if its
whole result reached storage, so a worker killed anywhere in between leaves
either a kept result or none (see :mod:`aoe_optuna.study.trials.recovery`). A failed
measurement's full log (a compiler's whole output) is kept before the result
attributes, as the trial's artifact ``<kind>.log`` (beside a SQLite storage,
see :mod:`aoe_optuna.study.storage.artifacts`): a worker killed after it leaves a log
on a trial whose result is not kept, and the config is measured again.
Fault points (:mod:`aoe_optuna.study.trials.fault_points`) mark each write of a trial's
life for the crash tests: ``ask``, ``param``, ``constraints``, ``measure``,
``log`` (after a failure's log), ``result`` (after each result attribute),
``tell`` (just before Optuna's tell; ``told`` after it is in the runner).
A worker paused past the heartbeat's grace may find its trial ended when it
writes its result: the result goes to the retry of its config instead
(:mod:`aoe_optuna.study.trials.ended_elsewhere`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import (
    ATTR_BUILD_CACHED,
    ATTR_BUILD_S,
    ATTR_CONSTRAINTS,
    ATTR_COST,
    ATTR_CUT_SHORT,
    ATTR_FAILURE,
    ATTR_FAILURE_KIND,
    ATTR_HELD_BY,
    ATTR_INFEASIBLE,
    ATTR_MEASURED,
    ATTR_REPEAT_OF,
    ATTR_SAMPLER_S,
    ATTR_SURPLUS,
    ATTR_TOKENS_PER_S,
    OPTUNA_FIXED_PARAMS_KEY,
)
from aoe_optuna.backends.base import FAILURE_LOG, BackendBase, BuildAhead
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.study.storage.artifacts import upload_trial_text
from aoe_optuna.study.trials.ended_elsewhere import EndedElsewhere, hand_over
from aoe_optuna.study.trials.fault_points import fault_point
from aoe_optuna.study.trials.recovery import trial_config
from aoe_optuna.workload.gemm import Workload

if TYPE_CHECKING:
    from aoe_optuna.spec.loader import StudySpec


class MeasurementFailed(Exception):
    """Raised inside the objective so Optuna records a FAIL trial and the study goes on."""


@dataclass
class Evaluation:
    """Everything one measured config yields."""

    ok: bool
    tokens_per_s: float = float("nan")
    latency_s: dict[str, float] = field(default_factory=dict)
    cost_s: float = 0.0
    build_s: float = 0.0  # the build's part of cost_s
    failure_kind: str | None = None
    reason: str = ""
    tflops: float = float("nan")
    roofline_fraction: float = float("nan")
    accuracy_loss: float | None = None
    log: str = ""  # a failure's full log, when the backend gave one
    # where the measurement's wall-clock went (a build pool's build_s, queue_s, time_s)
    phases: dict[str, Any] = field(default_factory=dict)
    # timing stopped early, clearly slower than the incumbent: the medians' 95% intervals
    cut_short: bool = False
    interval_s: dict[str, list[float]] = field(default_factory=dict)

    def user_attrs(self) -> dict[str, Any]:
        """The result's attributes in write order; ``measured`` last marks it whole."""
        attrs: dict[str, Any] = {ATTR_COST: round(self.cost_s, 6),
                                 ATTR_BUILD_S: round(self.build_s, 6)}
        if self.ok:
            attrs.update(
                tokens_per_s=self.tokens_per_s,
                latency_us={k: round(v * 1e6, 3) for k, v in self.latency_s.items()},
                tflops=round(self.tflops, 3),
            )
            if self.roofline_fraction == self.roofline_fraction:  # not NaN
                attrs["roofline_fraction"] = round(self.roofline_fraction, 5)
        else:
            attrs.update({ATTR_FAILURE_KIND: self.failure_kind, ATTR_FAILURE: self.reason[:2000]})
        if self.accuracy_loss is not None:
            attrs["accuracy_loss"] = self.accuracy_loss
        if self.cut_short:
            attrs[ATTR_CUT_SHORT] = True
            attrs["interval_us"] = {k: [round(v * 1e6, 3) for v in lo_hi]
                                    for k, lo_hi in self.interval_s.items()}
        attrs.update(self.phases)
        attrs[ATTR_MEASURED] = True
        return attrs


class ConfigEvaluator(Protocol):
    """What the objective measures a config with: an :class:`Evaluator`, or an operator
    run's model of an attention or vector kernel."""

    def evaluate(self, full_config: Mapping[str, Any]) -> Evaluation: ...


class BuildsAhead(ConfigEvaluator, Protocol):
    """An evaluator whose configs a build pool can build before their timing: each
    build's outcome (None where the kernel has no separate build: a model charges its
    build in ``evaluate``'s cost)."""

    def build_ahead(self, full_config: Mapping[str, Any]) -> list[BuildAhead | None]: ...


class Evaluator:
    """Measures a full config on every GEMM of a workload and turns latencies into tokens/s."""

    def __init__(
        self,
        workload: Workload,
        backend: BackendBase,
        roofline_tokens_per_s: float | None,
        max_accuracy_loss: float | None = None,
    ) -> None:
        self.workload = workload
        self.backend = backend
        self.roofline = roofline_tokens_per_s
        self.max_accuracy_loss = max_accuracy_loss
        # Early stop against the best config this evaluator timed in full: only where the
        # value is one GEMM's latency, so a config cut short cannot have been the winner.
        self.stops_early = backend.early_stop_margin is not None and len(workload.gemms) == 1
        self.incumbent: dict[str, float] = {}
        self._incumbent_tps = float("-inf")

    @classmethod
    def of_spec(cls, spec: StudySpec, backend: BackendBase | None = None,
                roofline_tokens_per_s: float | None = None) -> Evaluator:
        """The spec's evaluator: its workload on ``backend`` (by default the one the spec
        names), against the roofline given (a study's stored one) or the spec's own."""
        roofline = roofline_tokens_per_s if roofline_tokens_per_s is not None \
            else spec.roofline_tokens_per_s()
        return cls(spec.workload, backend if backend is not None else make_backend(spec),
                   roofline, max_accuracy_loss=spec.accuracy.get("max_relative_error"))

    def build_ahead(self, full_config: Mapping[str, Any]) -> list[BuildAhead | None]:
        """Each GEMM's kernel built into the backend's cache (a build pool's step)."""
        return [self.backend.build_ahead(full_config, g) for g in self.workload.gemms]

    def evaluate(self, full_config: Mapping[str, Any]) -> Evaluation:
        latencies: dict[str, float] = {}
        cost = build = 0.0
        worst_loss: float | None = None
        cut_short: dict[str, list[float]] = {}
        cached: list[Any] = []  # each measurement's word on its build's cache
        for gemm in self.workload.gemms:
            above = self.incumbent.get(gemm.name) if self.stops_early else None
            if above is not None:
                m = self.backend.measure(full_config, gemm, stop_above_s=above)  # type: ignore[call-arg]
            else:
                m = self.backend.measure(full_config, gemm)
            cost += m.cost_s
            build += float((m.extra or {}).get("build_s", 0.0) or 0.0)
            cached.append((m.extra or {}).get(ATTR_BUILD_CACHED))
            if m.ok and m.extra and m.extra.get("cut_short"):
                cut_short[gemm.name] = [float(v) for v in m.extra.get("interval_s") or ()]
            if not m.ok:
                return Evaluation(
                    ok=False, cost_s=cost, build_s=build, failure_kind=m.failure_kind,
                    reason=f"{gemm.name} {gemm.M}x{gemm.K}x{gemm.N}: {m.reason}",
                    log=str(m.extra.get(FAILURE_LOG, "")) if m.extra else "",
                    phases=_cached_phase(cached),
                )
            assert m.latency_s is not None
            latencies[gemm.name] = m.latency_s
            loss = m.extra.get("accuracy_loss") if m.extra else None
            if loss is not None:
                worst_loss = max(worst_loss or 0.0, float(loss))
        if (
            worst_loss is not None
            and self.max_accuracy_loss is not None
            and worst_loss > self.max_accuracy_loss
        ):
            return Evaluation(
                ok=False, cost_s=cost, build_s=build, failure_kind="accuracy",
                accuracy_loss=worst_loss, phases=_cached_phase(cached),
                reason=f"relative error {worst_loss:.3g} exceeds the allowed "
                f"{self.max_accuracy_loss:.3g} (accuracy.max_relative_error)",
            )
        tps = self.workload.tokens_per_s(latencies)
        gemm_time = sum(g.count * latencies[g.name] for g in self.workload.gemms)
        flops = sum(g.count * g.flops for g in self.workload.gemms)
        if not cut_short and tps > self._incumbent_tps:
            self.incumbent, self._incumbent_tps = dict(latencies), tps
        return Evaluation(
            ok=True, tokens_per_s=tps, latency_s=latencies, cost_s=cost, build_s=build,
            tflops=flops / gemm_time / 1e12,
            roofline_fraction=tps / self.roofline if self.roofline else float("nan"),
            accuracy_loss=worst_loss, cut_short=bool(cut_short), interval_s=cut_short,
            phases=_cached_phase(cached),
        )


def _cached_phase(said: Sequence[Any]) -> dict[str, Any]:
    """``build_cached`` where every measurement said whether the cache held its build (a
    failed build it remembered too): the summary counts only those as builds saved."""
    if said and all(isinstance(s, bool) for s in said):
        return {ATTR_BUILD_CACHED: all(said)}
    return {}


def suggest_config(trial: optuna.Trial, space: SearchSpace) -> dict[str, Any]:
    """Ask the trial for every parameter of ``space`` through its distributions."""
    config: dict[str, Any] = {}
    for name, dist in space.distributions().items():
        if isinstance(dist, optuna.distributions.IntDistribution):
            config[name] = trial.suggest_int(name, dist.low, dist.high, step=dist.step)
        else:
            assert isinstance(dist, optuna.distributions.CategoricalDistribution)
            config[name] = trial.suggest_categorical(name, dist.choices)
        fault_point("param")
    return config


def record_constraints(
    trial: optuna.Trial, space: SearchSpace, config: Mapping[str, Any]
) -> list[str]:
    """Set every rule's constraint value (same keys on every trial); return violated rules."""
    row = space.index(config)[None, :]
    values = {name: float(v[0]) for name, v in space.violations(row).items()}
    _set_constraints(trial, values)
    trial.set_user_attr(ATTR_CONSTRAINTS, {k: round(v, 6) for k, v in values.items()})
    if all(v <= 0 for v in values.values()):
        return []
    return space.explain(config)


def _set_constraints(trial: optuna.Trial, values: Mapping[str, float]) -> None:
    """``trial.set_constraint`` for each rule, without its per-call re-read of the trial.

    Optuna's ``set_constraint`` loads the whole trial from storage to check the
    key is new (27 ms on SQLite, 7 rules a trial); the keys here are always
    new, so write the same system attributes directly when Optuna exposes
    their prefix, and fall back to the public call otherwise.
    """
    prefix = getattr(optuna.trial._trial, "_CONSTRAINTS_KEY", None)
    cached = getattr(trial, "_cached_frozen_trial", None)
    if not isinstance(prefix, str) or cached is None:
        for name, value in values.items():
            trial.set_constraint(name, value)
        return
    for name, value in values.items():
        key = f"{prefix}:{name}"
        trial.storage.set_trial_system_attr(trial._trial_id, key, float(value))
        cached.system_attrs[key] = float(value)


class TuningObjective:
    """``study.optimize(TuningObjective(...), catch=(MeasurementFailed,))``."""

    def __init__(
        self,
        space: SearchSpace,
        evaluator: ConfigEvaluator,
        may_measure: Callable[[optuna.Trial], bool] | None = None,
    ) -> None:
        self.space = space
        self.evaluator = evaluator
        self.may_measure = may_measure
        self.late_note: str | None = None  # what became of a measurement finished too late

    @classmethod
    def from_spec(cls, spec: StudySpec, backend: BackendBase | None = None) -> TuningObjective:
        """The objective of a study spec: its space, each config measured on every GEMM of
        its workload by ``backend`` (by default the one the spec names)."""
        return cls(spec.space, Evaluator.of_spec(spec, backend))

    def __call__(self, trial: optuna.Trial) -> float:
        fault_point("ask")
        config = suggest_config(trial, self.space)
        violated = record_constraints(trial, self.space, config)
        fault_point("constraints")
        if violated:
            trial.set_user_attr(ATTR_INFEASIBLE, violated)
            trial.set_user_attr(ATTR_MEASURED, False)
            raise optuna.TrialPruned("infeasible: " + "; ".join(violated))
        # One reading for both checks: a holder that finishes between two readings
        # would be in neither (not yet finished in the first, no longer live in the second).
        others = trial.study.get_trials(deepcopy=False)
        earlier = _earlier_measurement(others, config)
        if earlier is not None:
            return _serve_repeat(trial, earlier)
        holder = _holder(others, trial.number, config)
        if holder is not None:
            trial.set_user_attr(ATTR_HELD_BY, holder)
            trial.set_user_attr(ATTR_MEASURED, False)
            raise optuna.TrialPruned(f"trial {holder} holds the same config")
        if self.may_measure is not None and not self.may_measure(trial):
            trial.set_user_attr(ATTR_SURPLUS, True)
            trial.set_user_attr(ATTR_MEASURED, False)
            raise optuna.TrialPruned("the measurement budget is taken by earlier trials")
        fault_point("measure")
        asked = trial.datetime_start
        sampler_s = (datetime.now() - asked).total_seconds() if asked is not None else None
        result = self.evaluator.evaluate(self.space.full_config(config))
        if sampler_s is not None:  # proposing and checking it, before any build
            result.phases[ATTR_SAMPLER_S] = round(sampler_s, 4)
        if not result.ok and result.log:
            _keep_log(trial, result)
            fault_point("log")
        try:
            for key, value in result.user_attrs().items():
                trial.set_user_attr(key, value)
                fault_point("result")
        except optuna.exceptions.UpdateFinishedTrialError:
            self.late_note = hand_over(trial.study, trial._trial_id, result.user_attrs(),
                                       result.tokens_per_s if result.ok else None,
                                       self.may_measure)
            raise EndedElsewhere(self.late_note) from None
        fault_point("tell")
        if not result.ok:
            raise MeasurementFailed(f"{result.failure_kind}: {result.reason}")
        return result.tokens_per_s


def _keep_log(trial: optuna.Trial, result: Evaluation) -> None:
    """The failure's full log as the trial's artifact; a store that cannot be written
    costs the log only (the reason says so), never the result."""
    try:
        upload_trial_text(trial, f"{result.failure_kind}.log", result.log)
    except OSError as exc:
        result.reason += f" (log not kept: {exc})"


def _earlier_measurement(
    trials: Sequence[FrozenTrial], config: Mapping[str, Any]
) -> FrozenTrial | None:
    """A finished trial of ``trials`` that already measured exactly this config, if any."""
    for t in trials:
        if is_measured(t) and t.params == dict(config):
            return t
    return None


def _holder(trials: Sequence[FrozenTrial], number: int, config: Mapping[str, Any]) -> int | None:
    """The number of a live trial with this config that trial ``number`` stands down for.

    Each trial writes its config, then reads the others: of two with the same
    config, whichever reads last sees the other. An enqueued config (every
    parameter fixed: the baseline, a retry) is in storage from its trial's
    creation; a sampled one only from its ``suggest_*`` writes, so a
    later-numbered trial may write and read before an earlier one writes.
    This trial stands down, against another live trial with its config:

    * enqueued, other enqueued: if the other is earlier. The later one was
      created after the earlier was readable, so it always sees it: the
      earlier measures.
    * enqueued, other sampled: if the other is earlier; that one may have read
      before this one was enqueued. A later one reads after, and stands down.
    * sampled, other earlier or later: always. The other may have read before
      this one wrote, and measures; both standing down costs only a round.

    Both stand down only when a sampled trial numbered below an enqueued one
    has its config. Runs enqueue the baseline before their first trial, so it
    is a study's first trial and never lost that way.
    """
    this = next((t for t in trials if t.number == number), None)
    fixed = this.system_attrs.get(OPTUNA_FIXED_PARAMS_KEY, {}) if this is not None else {}
    enqueued = set(config) <= set(fixed)
    for t in trials:
        if t.number == number or t.state not in (TrialState.RUNNING, TrialState.WAITING):
            continue
        if (t.number < number or not enqueued) and trial_config(t) == dict(config):
            return t.number
    return None


def _serve_repeat(trial: optuna.Trial, earlier: FrozenTrial) -> float:
    """Answer a repeated proposal from storage: same outcome, no measurement charged.

    Samplers that re-propose configs (TPE does, about a third of its proposals
    on the recorded GEMM space) would otherwise spend the budget re-measuring.
    """
    trial.set_user_attr(ATTR_REPEAT_OF, earlier.number)
    for key in ("tokens_per_s", "latency_us", "tflops", "roofline_fraction",
                ATTR_FAILURE_KIND, ATTR_FAILURE, ATTR_CUT_SHORT, "interval_us"):
        if key in earlier.user_attrs:
            trial.set_user_attr(key, earlier.user_attrs[key])
    if earlier.state == TrialState.COMPLETE:
        assert earlier.value is not None
        return float(earlier.value)
    value = earlier.user_attrs.get(ATTR_TOKENS_PER_S)
    if ATTR_FAILURE_KIND not in earlier.user_attrs and isinstance(value, (int, float)):
        return float(value)  # a whole result whose trial was failed (heartbeat) before its tell
    raise MeasurementFailed(f"same config as trial {earlier.number}, which failed")


def is_measured(trial: FrozenTrial) -> bool:
    """A trial that spent a measurement: complete, or finished with its whole result stored.

    Independent of how far a killed worker got: a FAIL trial counts only when
    ``measured``, the result's last write, reached storage.
    """
    if ATTR_REPEAT_OF in trial.user_attrs:
        return False
    if trial.state == TrialState.COMPLETE:
        return True
    return trial.state == TrialState.FAIL and bool(trial.user_attrs.get(ATTR_MEASURED))


def count_measured(trials: list[FrozenTrial]) -> int:
    return sum(1 for t in trials if is_measured(t))

