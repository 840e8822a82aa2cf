"""Run one sampler on one space for one seed, the way a user's study would.

Each run is a fresh in-memory study assembled by the session, as ``aoe-tune``
assembles one (:mod:`aoe_optuna.study.session`: the sampler chosen and built,
the study created with the spec stored, the evaluator and its roofline), and
driven by the product objective (:class:`TuningObjective`): infeasible
proposals are PRUNED with their constraint values (told, not measured, not
charged), failed measurements FAIL, successes COMPLETE with tokens/s. The run
stops after ``budget`` measurements, or after ``max_infeasible`` infeasible
proposals (so a sampler that keeps proposing infeasible configs cannot loop
forever; such runs are flagged).

Runs go to worker processes (``jobs``); each worker builds the space and the
backend once per case and keeps them.
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from aoe_optuna.study.session import SpaceSession, StudySession


@dataclass(frozen=True)
class Case:
    """A space to benchmark on: a study spec file, or a recorded Kernel Tuner cache file;
    with ``prior``, another case whose measurements (a recording), model (a spec's
    simulator) or winners (a knowledge base, kind "kb") are the prior of the samplers
    that take one (``--prior-space``)."""

    name: str
    kind: str  # "spec" or "replay"; a prior also "kb"
    path: str
    # a recorded space's noise: "none" (each config's recorded mean) or "recorded" (each
    # measurement drawn from the config's recorded repeats, seeded by the run's seed)
    noise: str = "none"
    prior: Case | None = None

    @classmethod
    def from_path(cls, path: str | Path, *, prior: str | Path | None = None,
                  noise: str = "none") -> Case:
        p = Path(path)
        name = _stem(p)
        kind = "replay" if p.name.endswith((".json.gz", ".gz")) or _is_cache_json(p) else (
            "kb" if _json_head_has(p, b'"aoe-kb"') else "spec")
        if prior is None:
            return cls(name=name, kind=kind, path=str(p.resolve()), noise=noise)
        source = cls.from_path(prior)
        return cls(f"{name}.prior_{source.name}", kind, str(p.resolve()), noise=noise,
                   prior=source)

    @property
    def space_name(self) -> str:
        """The space's own name (a case with a prior is named after both)."""
        return _stem(Path(self.path))


def _stem(p: Path) -> str:
    return p.name.removesuffix(".gz").removesuffix(".json")


def _is_cache_json(p: Path) -> bool:
    """A plain .json that is a Kernel Tuner cache (not a study spec)."""
    return _json_head_has(p, b'"tune_params_keys"')


def _json_head_has(p: Path, marker: bytes) -> bool:
    """A plain .json whose first 4 KiB hold ``marker`` (a cache's keys, a KB's format)."""
    if p.suffix != ".json" or not p.is_file():
        return False
    with p.open("rb") as fh:
        head = fh.read(4096)
    return marker in head


@dataclass(frozen=True)
class Task:
    case: Case
    sampler: str
    kwargs: tuple[tuple[str, Any], ...]
    seed: int
    budget: int
    max_infeasible: int
    label: str = ""  # how the sampler shows in tables (name + kwargs)
    prior: str = "on"  # with the case's prior: "on", "shuffled" (values permuted) or "off"


@dataclass
class RunResult:
    """One run's raw record: per measurement its cost (1/value; NaN = failed)."""

    case: str
    sampler: str
    seed: int
    budget: int = 0
    costs: list[float] = field(default_factory=list)
    true_costs: list[float] | None = None  # noise-free cost of each measured config (simulator)
    n_infeasible: int = 0
    n_duplicates: int = 0  # measurements of a config this run had already measured
    n_repeats: int = 0  # re-proposals answered from storage (not measured, not charged)
    sampler_s: list[float] = field(default_factory=list)  # per suggestion (infeasible too)
    wall_s: float = 0.0
    stopped: str = "budget"  # budget | infeasible cap | exhausted

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["costs"] = [None if np.isnan(c) else c for c in self.costs]
        if self.true_costs is not None:
            out["true_costs"] = [None if not np.isfinite(c) else c for c in self.true_costs]
        return out


@dataclass
class Built:
    """What a worker needs to run trials on a case."""

    space: Any
    evaluator: Any
    spec: Any = None  # the study spec of a spec case (stored in each run's study, as aoe-tune does)
    prior: Any = None  # the case's prior (a ConfigPrior), if it has one


@lru_cache(maxsize=4)
def build_case(case: Case) -> Built:
    """Space + evaluator of a case (once per process)."""
    from aoe_optuna.study.run.objective import Evaluator

    if case.kind == "replay":
        from aoe_optuna.backends.replay.backend import (
            ReplayBackend,
            load_recorded,
            replay_space,
            replay_workload,
        )

        recorded = load_recorded(Path(case.path))
        space = replay_space(recorded, recorded_only=True)
        workload = replay_workload(recorded)
        backend = ReplayBackend(recorded, noise=case.noise)
        return Built(space, Evaluator(workload, backend, roofline_tokens_per_s=None),
                     prior=case_prior(case))
    from aoe_optuna.spec.loader import load_spec

    spec = load_spec(case.path)
    return Built(spec.space, Evaluator.of_spec(spec), spec, case_prior(case))


def case_prior(case: Case) -> Any:
    """The prior of a case with ``--prior-space``: a recording's measurements, the
    simulator of another spec (the same space under other constants), or a knowledge
    base's winners of the case's op."""
    if case.prior is None:
        return None
    if case.prior.kind == "kb":
        from aoe_optuna.spec.loader import load_spec
        from aoe_optuna.study.prior_of import kb_prior

        return kb_prior(Path(case.prior.path), load_spec(case.path))
    if case.prior.kind == "replay":
        from aoe_optuna.samplers.priors.recording import recording_prior

        return recording_prior(case.prior.path)
    from aoe_optuna.samplers.priors.simulator import spec_simulator_prior
    from aoe_optuna.spec.loader import load_spec

    return spec_simulator_prior(load_spec(case.prior.path))


def task_prior(built: Built, task: Task) -> Any:
    """The prior this run's sampler gets: the case's, shuffled, or none."""
    if built.prior is None or task.prior == "off":
        return None
    if task.prior == "shuffled":
        from aoe_optuna.samplers.priors.table import shuffled

        return shuffled(built.prior, seed=task.seed)
    return built.prior


def open_session(built: Built, task: Task) -> StudySession | SpaceSession:
    """The run's study, held in memory, assembled by the session: a spec case's as
    ``aoe-tune`` assembles one (our samplers get the spec's workload and SoC), with no
    baseline enqueued (a run starts from its sampler's first proposal); a recorded
    space's on its bare space, with the replay's evaluator."""
    import optuna

    from aoe_optuna.study.session import IN_MEMORY, SamplerRequest, SpaceSession, StudySession

    storage = optuna.storages.InMemoryStorage()
    request = SamplerRequest(task.sampler, dict(task.kwargs), task.seed, task_prior(built, task))
    name = f"{task.case.name}-{task.label or task.sampler}-{task.seed}"
    evaluator = _evaluator_for_seed(built.evaluator, task.seed)
    if built.spec is None:
        return SpaceSession.open(IN_MEMORY, name, built.space, evaluator, request,
                                 storage=storage)
    return StudySession.open(IN_MEMORY, built.spec, name, request, storage=storage,
                             backend=evaluator.backend, enqueue_baseline_now=False)


def run_task(task: Task) -> RunResult:
    """One sampler, one seed: ask/tell until the budget or the infeasible cap. The loop
    is the bench's own, not the session's run: it times each proposal and stops on a
    total of idle proposals, which ``Study.optimize`` does neither of."""
    import optuna
    from optuna.trial import TrialState

    from aoe_optuna.study.run.objective import MeasurementFailed, suggest_config

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    built = build_case(task.case)
    session = open_session(built, task)
    study, space, objective = session.study, session.space, session.objective()
    result = RunResult(case=task.case.name, sampler=task.label or task.sampler, seed=task.seed,
                       budget=task.budget)
    seen: set[tuple[Any, ...]] = set()
    truth = _truth(built)
    if truth is not None:
        result.true_costs = []
    start = time.perf_counter()
    while len(result.costs) < task.budget:
        if result.n_infeasible + result.n_repeats >= task.max_infeasible:
            result.stopped = "infeasible cap"  # infeasible proposals and repeats together
            break
        t0 = time.perf_counter()
        try:
            trial = study.ask()
            config = suggest_config(trial, space)
        except RuntimeError as exc:  # e.g. a grid sampler that ran out of points
            result.stopped = f"exhausted ({exc})"[:120]
            break
        result.sampler_s.append(time.perf_counter() - t0)
        try:
            value = objective(trial)  # the same params: suggest_* returns them again
        except optuna.TrialPruned:
            study.tell(trial, state=TrialState.PRUNED)
            result.n_infeasible += 1
            continue
        except MeasurementFailed:
            study.tell(trial, state=TrialState.FAIL)
            if _is_repeat(trial):
                result.n_repeats += 1
                continue
            result.costs.append(float("nan"))
        else:
            study.tell(trial, value)
            if _is_repeat(trial):
                result.n_repeats += 1
                continue
            result.costs.append(1.0 / value)
        if truth is not None:
            assert result.true_costs is not None
            result.true_costs.append(truth(config))
        key = tuple(config[n] for n in space.names)
        result.n_duplicates += key in seen
        seen.add(key)
    result.wall_s = time.perf_counter() - start
    return result


def _evaluator_for_seed(evaluator: Any, seed: int) -> Any:
    """The case's evaluator with a simulator's noise drawn afresh for this run's seed.

    The simulator's noise is a fixed function of (noise seed, config, GEMM). With the
    spec's one noise seed, every run would meet the same lucky and unlucky configs,
    and the "20 seeds" would share one draw of the noise; each run is an
    independent repetition only if its measurements are too.
    """
    backend = evaluator.backend
    fresh = backend.with_noise_seed(int(seed))  # a recording's draws
    if fresh is backend:
        if not getattr(backend, "noise", 0) or not hasattr(backend, "seed"):
            return evaluator
        fresh = copy.copy(backend)
        fresh.seed = int(seed)
    out = copy.copy(evaluator)
    out.backend = fresh
    return out


def _is_repeat(trial: Any) -> bool:
    from aoe_optuna.attrs import ATTR_REPEAT_OF

    return ATTR_REPEAT_OF in trial.user_attrs


def _truth(built: Built) -> Callable[[dict[str, Any]], float] | None:
    """For a backend with a noise-free vectorised ``latency`` (the simulator), or a
    recording whose measurements are drawn from its repeats: config -> noise-free cost."""
    backend = built.evaluator.backend
    if getattr(backend, "timing_noise_drawn", False):
        return lambda config: backend.recorded_latency_s(config)
    if not hasattr(backend, "latency"):
        return None
    from aoe_optuna.bench.exhaustive import simulator_costs

    space, workload = built.space, built.evaluator.workload

    def cost(config: dict[str, Any]) -> float:
        row = space.index(config)[None, :]
        return float(simulator_costs(space, workload, backend, row)[0])

    return cost


def _init_worker() -> None:
    """A worker process: one thread for torch, which reads it as it loads (a worker
    whose samplers never fit a model never loads torch, ~1.5 s of CPU); quiet."""
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    _quiet()


def init_in_process() -> None:
    """This process runs the tasks: one torch thread from here on, as in a worker (the
    benchmark parallelises over seeds, not inside torch)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _quiet()
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass


def _quiet() -> None:
    """Quiet as ``aoe-tune`` is: the session names each study's metric, which Optuna
    flags as experimental on every run."""
    import warnings

    from optuna.exceptions import ExperimentalWarning

    warnings.filterwarnings("ignore", category=ExperimentalWarning)


def run_tasks(tasks: Iterable[Task], jobs: int = 2,
              progress: Callable[[RunResult], None] | None = None) -> list[RunResult]:
    """Every task, ``jobs`` at a time in worker processes (in this process when jobs == 1)."""
    tasks = list(tasks)
    results: list[RunResult] = []
    if jobs <= 1:
        init_in_process()
        for t in tasks:
            results.append(run_task(t))
            if progress:
                progress(results[-1])
        return results
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx,
                             initializer=_init_worker) as pool:
        futures = [pool.submit(run_task, t) for t in tasks]
        for fut in as_completed(futures):
            results.append(fut.result())
            if progress:
                progress(results[-1])
    return results
