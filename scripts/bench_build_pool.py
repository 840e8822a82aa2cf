"""Serial against the build pool, paired per seed: real cpu builds, and a modelled chip.

    nice .venv/bin/python scripts/bench_build_pool.py cpu --seeds 3 --n 30
    .venv/bin/python scripts/bench_build_pool.py modelled --seeds 3 --n 200
    nice .venv/bin/python scripts/bench_build_pool.py layer --seeds 3 --n 800

``cpu``: the cpu backend on this host (real gcc builds, real timing on a
pinned core). Each seed runs twice from a fresh build cache: serial (one
trial in flight: build, then time) and the pool (``--builders``, default
cores minus one, one trial timed while the others build), both pinned the
same way, so the pool's overlap is the only difference. Reported per arm:
measurements per wall-minute, wall-clock to 99% of the best either arm of
the seed found, best at equal measurements over the best of all runs, the
timing core's idle share (1 - time spent timing / wall), and the bound
(build + time) / max(build, time) of the serial arm's mean build and time.

``modelled``: simulator studies of the decode and prefill GEMMs, serial and
pooled (``--host-cores`` minus one builders per card; at most
``--max-in-flight`` trials proposed ahead, each a thread of this process, so
the eight-card server's 184 builders are fed by 32 trials), on the virtual clock
of :mod:`aoe_optuna.study.run.pipeline_clock` with the build-time model of
:mod:`aoe_optuna.backends.build_time`: wall-clock to 99% of the space's
optimum.

``layer``: ``aoe-tune operators`` on the decode layer study
(``studies/qwen25_7b_decode_layer_910b2.json``: every GEMM shape, attention and
the vector kernels tuned) and on its prefill point (4k tokens; no prefill layer
spec ships), serial and with ``--builders``, on a 16-core host with one card and
on the eight-card server: wall-clock until the true (noise-free) end-to-end
tokens/s of each operator's winner so far reaches 99% of the per-operator limit
(every operator at its exhaustive optimum). The runs are clocked by
:mod:`aoe_optuna.bench.virtual_pool`: one thread proposes each trial when a slot
frees on the pool's clock, with the trials then in flight RUNNING, so the
server's 192 trials in flight are fed without 192 threads (its docstring says
what differs from a run on the chip). Serial is today's way: one worker per card,
each building, then timing; the pool builds on the cores minus one per card,
each card's worker taking its share, and a chunk holds at least what is in
flight (:meth:`aoe_optuna.operators.tuner.OperatorTuner.chunk_size`).

``batch``: what proposing ahead costs the search itself, without the timing noise a
real host adds: the same simulator study and seeds with one trial in flight and with
``--in-flight`` (comma-separated; 2 is this machine's pool, 16 the 16-core host's), best
over the space's optimum at equal measurements, paired per seed.

Prints one markdown table per part and writes the rows as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import optuna

from aoe_optuna.attrs import ATTR_BUILD_S
from aoe_optuna.backends.cpu.backend import CpuBackend
from aoe_optuna.spec.loader import StudySpec, spec_from_dict
from aoe_optuna.study.create import best_trial
from aoe_optuna.study.run.build_pool import (
    ATTR_TIME_S,
    PoolPlan,
    default_builders,
)
from aoe_optuna.study.run.loop import Budget, run_study
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.session import SamplerRequest, StudySession

CPU_SPACE = {
    "tile_m": [16, 32, 64, 128], "tile_n": [16, 32, 64, 128, 256],
    "tile_k": [16, 32, 64, 128, 256], "pipeline": [0, 1, 2], "l1_prefetch": [0, 1],
    "output_align": [0, 1], "opt_level": ["O1", "O2", "O3"],
    "schedule": ["default", "balanced", "throughput", "latency"],
    "unroll_factor": [0, 2, 4, 8], "layout": ["row_major", "col_major", "z_major"],
    "quantization": [False],
}
CPU_BASELINE = {"tile_m": 32, "tile_n": 32, "tile_k": 32, "pipeline": 0, "l1_prefetch": 0,
                "output_align": 0, "opt_level": "O2", "schedule": "default",
                "unroll_factor": 0, "layout": "row_major", "quantization": False}


def cpu_spec(work_dir: Path, size: int, max_seconds: float) -> StudySpec:
    """``size``-cubed fp32 GEMMs on the cpu backend, builds cached in ``work_dir``."""
    return spec_from_dict({
        "op_name": "GemmKernel", "search_space": CPU_SPACE, "baseline": CPU_BASELINE,
        "optimization_objective": "throughput", "hardware": {"soc": "Ascend910B2"},
        "workload": {"gemm": {"M": size, "K": size, "N": size, "dtype": "fp32"}},
        # the median, timed to its precision: what the pool's tables were measured with
        "backend": {"name": "cpu", "max_seconds": max_seconds, "work_dir": str(work_dir),
                    "estimator": "median"},
    })


@dataclass
class Arm:
    """One run of one arm on one seed."""

    arm: str
    seed: int
    measured: int
    wall_s: float
    best: float
    curve: list[tuple[float, float]]  # (seconds since start, value) of each measurement
    build_s: float
    time_s: float
    best_config: dict[str, Any] | None = None
    retimed: float = float("nan")  # the best config's tokens/s timed again, alone

    def per_minute(self) -> float:
        return 60.0 * self.measured / self.wall_s

    def to_reach(self, target: float) -> float | None:
        best = float("-inf")
        for at, value in self.curve:
            best = max(best, value)
            if best >= target:
                return at
        return None

    def idle_share(self) -> float:
        return max(0.0, 1.0 - self.time_s / self.wall_s)


def run_cpu_arm(root: Path, seed: int, n: int, plan: PoolPlan, arm: str, size: int,
                max_seconds: float, sampler: str) -> Arm:
    work = Path(tempfile.mkdtemp(prefix=f"{arm}-{seed}-", dir=root))
    spec = cpu_spec(work / "builds", size, max_seconds)
    session = StudySession.open(f"sqlite:///{work / 'study.db'}", spec,
                                sampler=SamplerRequest(sampler, seed=seed))
    started = time.time()
    result = run_study(session.study, session.objective(), Budget(n_measurements=n),
                       pool=plan)
    out = arm_of(arm, seed, session.study, started, result.wall_s)
    best = best_trial(session.study)
    out.best_config = None if best is None else spec.space.full_config(best.params)
    return out


def retime(arms: Sequence[Arm], root: Path, size: int, max_seconds: float,
           rounds: int = 3) -> None:
    """Each arm's best config timed again with nothing else running (rounds interleaved,
    the median kept): values measured while a build ran beside them read low."""
    spec = cpu_spec(root / "retime", size, max_seconds)
    backend = CpuBackend(work_dir=root / "retime", max_seconds=max_seconds,
                         early_stop_margin=0, estimator="median")
    gemm = spec.workload.gemms[0]
    seen: list[tuple[Arm, list[float]]] = [(a, []) for a in arms if a.best_config]
    for _ in range(rounds):
        for a, values in seen:
            m = backend.measure(a.best_config or {}, gemm)
            if m.ok and m.latency_s:
                values.append(spec.workload.tokens_per_s({gemm.name: m.latency_s}))
    for a, values in seen:
        a.retimed = statistics.median(values) if values else float("nan")


def arm_of(arm: str, seed: int, study: optuna.Study, started: float, wall_s: float) -> Arm:
    trials = sorted((t for t in study.get_trials(deepcopy=False) if is_measured(t)),
                    key=lambda t: t.datetime_complete)
    curve = [(t.datetime_complete.timestamp() - started,
              t.value if t.value is not None else float("-inf")) for t in trials]
    values = [v for _, v in curve]
    return Arm(arm, seed, len(trials), wall_s, max(values, default=float("nan")), curve,
               sum(float(t.user_attrs.get(ATTR_BUILD_S, 0.0)) for t in trials),
               sum(float(t.user_attrs.get(ATTR_TIME_S, 0.0)) for t in trials))


def cpu_part(args: argparse.Namespace) -> dict[str, Any]:
    builders = args.builders or default_builders()
    pool = PoolPlan.for_host(builders)
    serial = PoolPlan(builders, pool.lease, pool.build_cpus, pool.timing_cpus, in_flight=1)
    root = Path(tempfile.mkdtemp(prefix="aoe-bench-pool-"))
    pairs: list[tuple[Arm, Arm]] = []
    load_before = os.getloadavg()
    for seed in range(args.seeds):
        s = run_cpu_arm(root, seed, args.n, serial, "serial", args.size, args.max_seconds,
                        args.sampler)
        p = run_cpu_arm(root, seed, args.n, pool, "pool", args.size, args.max_seconds,
                        args.sampler)
        retime([s, p], root, args.size, args.max_seconds)
        pairs.append((s, p))
        print(f"seed {seed}: serial {s.per_minute():.1f}/min best {s.best:.1f}; "
              f"pool {p.per_minute():.1f}/min best {p.best:.1f}", file=sys.stderr)
    load_after = os.getloadavg()
    reference = max(a.best for pair in pairs for a in pair)
    retimed_ref = max(a.retimed for pair in pairs for a in pair)
    rows = []
    for s, p in pairs:
        target = 0.99 * max(s.best, p.best)
        rows.append({
            "seed": s.seed,
            "serial_per_min": s.per_minute(), "pool_per_min": p.per_minute(),
            "speedup": p.per_minute() / s.per_minute(),
            "serial_to_99": s.to_reach(target), "pool_to_99": p.to_reach(target),
            "serial_best_over_ref": s.best / reference, "pool_best_over_ref": p.best / reference,
            "serial_retimed_over_ref": s.retimed / retimed_ref,
            "pool_retimed_over_ref": p.retimed / retimed_ref,
            "serial_idle": s.idle_share(), "pool_idle": p.idle_share(),
            "bound": (s.build_s + s.time_s) / max(s.build_s, s.time_s),
            "build_per_candidate": s.build_s / s.measured,
            "time_per_candidate": s.time_s / s.measured,
        })
    return {"part": "cpu", "builders": builders, "n": args.n, "size": args.size,
            "max_seconds": args.max_seconds, "sampler": args.sampler,
            "load_before": load_before, "load_after": load_after, "rows": rows,
            "arms": [asdict(a) for pair in pairs for a in pair]}


def print_cpu(result: dict[str, Any]) -> None:
    print(f"\ncpu backend, {result['size']}^3 fp32, {result['n']} measurements per run, "
          f"sampler {result['sampler']}, {result['builders']} builder(s); load average "
          f"before {result['load_before'][0]:.2f}, after {result['load_after'][0]:.2f}\n")
    print("| seed | meas./min serial | pool | x | to 99% serial (s) | pool (s) "
          "| best/ref as measured, serial | pool | best re-timed alone/ref, serial | pool "
          "| timing core idle serial | pool | build s | time s | bound |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        print(f"| {r['seed']} | {r['serial_per_min']:.1f} | {r['pool_per_min']:.1f} "
              f"| {r['speedup']:.2f} | {_s(r['serial_to_99'])} | {_s(r['pool_to_99'])} "
              f"| {r['serial_best_over_ref']:.3f} | {r['pool_best_over_ref']:.3f} "
              f"| {r['serial_retimed_over_ref']:.3f} | {r['pool_retimed_over_ref']:.3f} "
              f"| {r['serial_idle']:.0%} | {r['pool_idle']:.0%} "
              f"| {r['build_per_candidate']:.2f} | {r['time_per_candidate']:.2f} "
              f"| {r['bound']:.2f} |")
    speedups = [r["speedup"] for r in result["rows"]]
    print(f"\nmeasurements per wall-minute, pool over serial: median "
          f"{statistics.median(speedups):.2f}x (min {min(speedups):.2f}, "
          f"max {max(speedups):.2f})")
    rows = result["rows"]
    print(paired_line("best re-timed alone at equal measurements, pool against serial",
                      [r["pool_retimed_over_ref"] for r in rows],
                      [r["serial_retimed_over_ref"] for r in rows]))


def paired_line(what: str, a: Sequence[float], b: Sequence[float]) -> str:
    """One line: wins/ties/losses of ``a`` against ``b`` per seed (higher is better), the
    geometric mean of a/b and its 90% bootstrap interval over the seeds."""
    import numpy as np

    from aoe_optuna.bench.metrics import paired_comparison

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    c = paired_comparison(-x, -y, np.random.default_rng(0))  # lower is better there
    logs = np.log(x / y)
    idx = np.random.default_rng(1).integers(0, logs.size, size=(4000, logs.size))
    lo, hi = np.exp(np.percentile(logs[idx].mean(axis=1), [5, 95]))
    return (f"{what}: {c['wins']} better, {c['ties']} tied, {c['losses']} worse of "
            f"{c['n']} seeds (sign test p {c['sign_p']:.2f}); geometric mean "
            f"{np.exp(logs.mean()):.3f} (90% bootstrap {lo:.3f} to {hi:.3f})")


STUDIES = {"decode": "studies/qwen25_7b_decode_catlass_910b2.json",
           "prefill": "studies/qwen25_7b_prefill_catlass_910b2.json"}


@dataclass(frozen=True)
class Host:
    """A machine the clock models: build cores and cards, and how a run uses them."""

    name: str
    builders: int
    devices: int
    in_flight: int  # trials proposed and unfinished at once


def hosts(cores: int, cards: int, max_in_flight: int) -> list[Host]:
    """Today's way (each card's worker builds, then times) and the pool (cores minus one
    per card build; each card times one while its builders build), with at most
    ``max_in_flight`` trials proposed and unfinished at once."""
    pool = cores - cards
    window = min(pool + cards, max_in_flight)
    return [Host(f"{cores} cores, {cards} card(s), serial", cards, cards, cards),
            Host(f"{cores} cores, {cards} card(s), pool ({window} in flight)", pool, cards,
                 window)]


def modelled_arm(spec: StudySpec, host: Host, seed: int, n: int, sampler: str,
                 root: Path) -> list[tuple[float, float]]:
    """(finish time on the host's clock, value) of each measurement, in trial order."""
    from aoe_optuna.backends.build_time import RUN_OVERHEAD
    from aoe_optuna.backends.simulator.backend import AscendSimulator
    from aoe_optuna.study.run.device_lease import DeviceLease
    from aoe_optuna.study.run.pipeline_clock import jobs_of, pool_finish_times

    options = {k: v for k, v in spec.backend.items() if k != "name"}
    backend = AscendSimulator.from_options({**options, "run_s": RUN_OVERHEAD.seconds},
                                           spec.profile)
    db = root / f"{host.builders}-{host.devices}-{seed}-{time.monotonic_ns()}.db"
    session = StudySession.open(f"sqlite:///{db}", spec, backend=backend,
                                sampler=SamplerRequest(sampler, seed=seed))
    plan = None
    if host.in_flight > 1:
        plan = PoolPlan(host.builders, DeviceLease(f"bench-{os.getpid()}"),
                        in_flight=host.in_flight)
    run_study(session.study, session.objective(), Budget(n_measurements=n), pool=plan)
    trials = sorted((t for t in session.study.get_trials(deepcopy=False)
                     if isinstance(t.user_attrs.get("cost_s"), (int, float))),
                    key=lambda t: t.number)
    ends = pool_finish_times(jobs_of(trials), host.builders, host.devices, host.in_flight)
    return [(end, t.value if t.value is not None else float("-inf"))
            for end, t in zip(ends, trials, strict=True)]


def to_reach(curve: list[tuple[float, float]], target: float) -> float | None:
    best = float("-inf")
    for at, value in sorted(curve):
        best = max(best, value)
        if best >= target:
            return at
    return None


def modelled_part(args: argparse.Namespace) -> dict[str, Any]:
    from aoe_optuna.backends.build_time import RUN_OVERHEAD, build_time
    from aoe_optuna.bench.exhaustive import simulator_exhaustive
    from aoe_optuna.spec.backend import make_backend
    from aoe_optuna.spec.loader import load_spec

    root = Path(tempfile.mkdtemp(prefix="aoe-bench-modelled-"))
    machines = [*hosts(args.host_cores, 1, args.max_in_flight),
                *hosts(args.server_cores, args.server_cards, args.max_in_flight)]
    rows = []
    for study, path in STUDIES.items():
        spec = load_spec(Path(__file__).resolve().parents[1] / path)
        optimum = 1.0 / simulator_exhaustive(spec.space, spec.workload,
                                             make_backend(spec)).optimum
        for seed in range(args.seeds):
            for host in machines:
                curve = modelled_arm(spec, host, seed, args.n, args.sampler, root)
                best = max(v for _, v in curve)
                rows.append({"study": study, "host": host.name, "seed": seed,
                             "to_99_s": to_reach(curve, 0.99 * optimum),
                             "end_s": max(at for at, _ in curve),
                             "best_over_opt": best / optimum})
                print(f"{study} seed {seed} {host.name}: to 99% {rows[-1]['to_99_s']}, "
                      f"best/opt {best / optimum:.4f}", file=sys.stderr)
    gemm = build_time("gemm", "catlass")
    return {"part": "modelled", "n": args.n, "sampler": args.sampler,
            "build_s": gemm.seconds, "build_source": gemm.source,
            "run_s": RUN_OVERHEAD.seconds, "run_source": RUN_OVERHEAD.source,
            "rows": rows}


def print_clock_table(rows: Sequence[dict[str, Any]], target: str, quality: str,
                      key: str) -> None:
    """One row per study and host over the seeds: median clock to 99% of ``target``,
    seeds reaching it, median clock at the end, median ``quality`` (``key``)."""
    print(f"| study | host | median to 99% {target} (s) | seeds reaching it "
          f"| median clock at the last measurement (s) | median {quality} |")
    print("|---|---|---|---|---|---|")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["study"], r["host"]), []).append(r)
    for (study, host), rs in groups.items():
        reached = [r["to_99_s"] for r in rs if r["to_99_s"] is not None]
        med = f"{statistics.median(reached):,.0f}" if reached else "-"
        print(f"| {study} | {host} | {med} | {len(reached)}/{len(rs)} "
              f"| {statistics.median(r['end_s'] for r in rs):,.0f} "
              f"| {statistics.median(r[key] for r in rs):.4f} |")


def print_modelled(result: dict[str, Any]) -> None:
    print(f"\nmodelled clock, {result['n']} measurements per run, sampler "
          f"{result['sampler']}; build {result['build_s']:g} s ({result['build_source']}); "
          f"run overhead {result['run_s']:g} s ({result['run_source']})\n")
    print_clock_table(result["rows"], "of optimum", "best/opt", "best_over_opt")


def batch_part(args: argparse.Namespace) -> dict[str, Any]:
    from aoe_optuna.bench.exhaustive import simulator_exhaustive
    from aoe_optuna.spec.backend import make_backend
    from aoe_optuna.spec.loader import load_spec

    root = Path(tempfile.mkdtemp(prefix="aoe-bench-batch-"))
    spec = load_spec(Path(__file__).resolve().parents[1] / args.study)
    optimum = 1.0 / simulator_exhaustive(spec.space, spec.workload,
                                         make_backend(spec)).optimum
    widths = [1, *[int(w) for w in args.in_flight.split(",")]]
    rows = []
    for seed in range(args.seeds):
        for width in widths:
            host = Host(f"{width} in flight", max(1, width - 1), 1, width)
            curve = modelled_arm(spec, host, seed, args.n, args.sampler, root)
            best = max(v for _, v in curve)
            rows.append({"in_flight": width, "seed": seed, "best_over_opt": best / optimum})
            print(f"seed {seed}, {width} in flight: best/opt {best / optimum:.4f}",
                  file=sys.stderr)
    return {"part": "batch", "study": args.study, "n": args.n, "sampler": args.sampler,
            "widths": widths, "rows": rows}


def print_batch(result: dict[str, Any]) -> None:
    by = {w: [r["best_over_opt"] for r in result["rows"] if r["in_flight"] == w]
          for w in result["widths"]}
    print(f"\n{result['study']} on the simulator, {result['n']} measurements per run, "
          f"sampler {result['sampler']}, {len(by[1])} seeds\n")
    print("| trials in flight | median best/opt | worst best/opt |")
    print("|---|---|---|")
    for w, values in by.items():
        print(f"| {w} | {statistics.median(values):.4f} | {min(values):.4f} |")
    for w in result["widths"][1:]:
        print(paired_line(f"{w} in flight against 1", by[w], by[1]))


LAYER_SPEC = "studies/qwen25_7b_decode_layer_910b2.json"
# each layer study's workload over the decode layer spec's (no prefill layer spec ships:
# prefill is bench_layer_ops.py's 4k-token point)
LAYER_STUDIES: dict[str, dict[str, Any]] = {
    "decode layer": {},
    "prefill layer": {"phase": "prefill", "batch": 1, "seq_len": 4096},
}


@dataclass(frozen=True)
class LayerHost:
    """A machine an operator run is clocked on, and how the run uses it."""

    name: str
    builders: int  # build cores in all
    devices: int
    workers: int  # the tuner's workers (one per card): its chunk is 4 per worker
    pooled: bool  # build ahead: each worker's builders = builders / workers
    key: str  # how --arms names it
    chunk: int | None = None  # a chunk past the warm-up (None: the tuner's rule)

    def pool(self) -> Any:
        from aoe_optuna.bench.virtual_pool import VirtualPool

        if not self.pooled:  # each card's worker builds, then times: one in flight each
            return VirtualPool(self.devices, self.devices, self.devices)
        return VirtualPool(self.builders, self.devices)

    def per_worker_builders(self) -> int | None:
        return self.builders // self.workers if self.pooled else None


def layer_hosts(cores: int, cards: int, key: str) -> list[LayerHost]:
    """Serial, the pool (a chunk holds what is in flight), and the pool with serial's
    chunk (4 per card: builders idle, the scheduler's allocation as fine as serial's)."""
    pool = cores - cards
    where = f"{cores} cores, {cards} card(s)"
    return [LayerHost(f"{where}, serial", cards, cards, cards, False, f"{key}-serial"),
            LayerHost(f"{where}, pool ({pool} builders, {pool + cards} in flight)", pool,
                      cards, cards, True, f"{key}-pool"),
            LayerHost(f"{where}, pool, chunks of {4 * cards}", pool, cards, cards, True,
                      f"{key}-pool-small-chunks", chunk=4 * cards)]


def layer_spec(workload: dict[str, Any]) -> StudySpec:
    """The decode layer spec at ``workload``, its timed runs charged the run overhead."""
    from aoe_optuna.backends.build_time import RUN_OVERHEAD
    from aoe_optuna.spec.format import read_document

    root = Path(__file__).resolve().parents[1]
    doc = read_document(root / LAYER_SPEC)
    doc["workload"] = {**doc["workload"], **workload}
    doc["backend"] = {**doc["backend"], "run_s": RUN_OVERHEAD.seconds}
    return spec_from_dict(doc, source=f"{LAYER_SPEC} {workload}")


def layer_limit(spec: StudySpec) -> float:
    """End-to-end tokens/s with every operator at its exhaustive (noise-free) optimum."""
    from aoe_optuna.bench.exhaustive import best_per_gemm

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_layer_ops import layer_optimum
    from bench_operator_tuning import TrueLatency

    best = best_per_gemm(spec.space, spec.workload, TrueLatency(spec).sim)
    lat = {g.name: best[g.name][0] for g in spec.workload.gemms}
    return spec.workload.tokens_per_s({**lat, **layer_optimum(spec)})


def layer_arm(spec: StudySpec, host: LayerHost, seed: int, n: int,
              sampler: str) -> list[tuple[float, float]]:
    """(clock, true end-to-end tokens/s of each operator's winner so far) after each
    measurement, once every operator has one."""
    from optuna.trial import TrialState

    from aoe_optuna.bench.virtual_pool import VirtualPoolTuner
    from aoe_optuna.operators.layer_ops import LayerOperator
    from aoe_optuna.operators.scheduler import make_scheduler
    from aoe_optuna.operators.shapes import step_latencies
    from aoe_optuna.operators.tuner import TunerOptions

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_layer_ops import true_tokens_per_s
    from bench_operator_tuning import TrueLatency

    options = TunerOptions(budget=n, scheduler=make_scheduler("gradient"), sampler=sampler,
                           seed=seed, n_workers=host.workers,
                           builders=host.per_worker_builders())
    pool = host.pool()
    tuner = VirtualPoolTuner(optuna.storages.InMemoryStorage(), "memory", "bench", spec,
                             options, pool=pool, chunk=host.chunk)
    tuner.run()
    events = sorted((pool.ends[(study.study_name, t.number)], i, t.number, t)
                    for i, study in enumerate(tuner.studies)
                    for t in study.get_trials(deepcopy=False)
                    if t.state == TrialState.COMPLETE and t.value is not None
                    and (study.study_name, t.number) in pool.ends)
    truth, best, curve = TrueLatency(spec), {}, []
    for end, i, _, t in events:
        if i in best and best[i].value >= t.value:
            continue
        best[i] = t
        if len(best) < len(tuner.shapes):
            continue
        gemms = {s.key: dict(best[j].params) for j, s in enumerate(tuner.shapes)
                 if not isinstance(s, LayerOperator)}
        layer = {s.key: 1.0 / best[j].value for j, s in enumerate(tuner.shapes)
                 if isinstance(s, LayerOperator)}
        curve.append((end, true_tokens_per_s(spec, truth, gemms,  # type: ignore[arg-type]
                                             step_latencies(spec.workload, tuner.layer_ops,
                                                            layer))))
    return curve


def layer_part(args: argparse.Namespace) -> dict[str, Any]:
    from aoe_optuna.backends.build_time import RUN_OVERHEAD, part_build_time

    machines = [h for h in [*layer_hosts(args.host_cores, 1, "host"),
                            *layer_hosts(args.server_cores, args.server_cards, "server")]
                if h.key in args.arms.split(",")]
    rows, limits = [], {}
    for study, workload in LAYER_STUDIES.items():
        if study.split()[0] not in args.studies.split(","):
            continue
        spec = layer_spec(workload)
        limits[study] = limit = layer_limit(spec)
        print(f"{study}: per-operator limit {limit:.2f} tokens/s", file=sys.stderr)
        for seed in range(args.seeds):
            for host in machines:
                started = time.monotonic()
                curve = layer_arm(spec, host, seed, args.n, args.sampler)
                rows.append({"study": study, "host": host.name, "seed": seed,
                             "to_99_s": to_reach(curve, 0.99 * limit),
                             "end_s": max((at for at, _ in curve), default=0.0),
                             "final_over_limit": curve[-1][1] / limit if curve else 0.0,
                             "cpu_s": time.monotonic() - started})
                r = rows[-1]
                print(f"{study} seed {seed} {host.name}: to 99% {r['to_99_s']}, final "
                      f"{r['final_over_limit']:.4f} ({r['cpu_s']:.0f} s)", file=sys.stderr,
                      flush=True)
    return {"part": "layer", "n": args.n, "sampler": args.sampler, "limits": limits,
            "build": {part: {"s": part_build_time(part).seconds,
                             "source": part_build_time(part).source}
                      for part in ("gemm", "attention", "vector")},
            "run_s": RUN_OVERHEAD.seconds, "run_source": RUN_OVERHEAD.source,
            "rows": rows}


def print_layer(result: dict[str, Any]) -> None:
    builds = ", ".join(f"{part} {b['s']:g} s" for part, b in result["build"].items())
    print(f"\noperator runs (aoe-tune operators) on the modelled clock, {result['n']} "
          f"measurements per run (re-timing included, not clocked), sampler "
          f"{result['sampler']}; builds {builds} ({result['build']['gemm']['source']}); "
          f"run overhead {result['run_s']:g} s\n")
    print_clock_table(result["rows"], "of the limit", "final / limit", "final_over_limit")
    print("\n| study | seed | pool | to 99% serial (s) | pool (s) | x | final/limit serial "
          "| pool |")
    print("|---|---|---|---|---|---|---|---|")
    by = {(r["study"], r["seed"], r["host"]): r for r in result["rows"]}
    for (study, seed, host), r in by.items():
        if "serial" not in host:
            continue
        where = host.split(", serial")[0]
        for (st, se, h), p in by.items():
            if st != study or se != seed or not h.startswith(f"{where}, pool"):
                continue
            x = (f"{r['to_99_s'] / p['to_99_s']:.1f}" if r["to_99_s"] and p["to_99_s"]
                 else "-")
            print(f"| {study} | {seed} | {h} | {_s(r['to_99_s'])} | {_s(p['to_99_s'])} "
                  f"| {x} | {r['final_over_limit']:.4f} | {p['final_over_limit']:.4f} |")


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=("cpu", "modelled", "batch", "layer"))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--n", type=int, default=30, help="measurements per run")
    p.add_argument("--builders", type=int, default=None)
    p.add_argument("--size", type=int, default=256, help="cpu: M = K = N")
    p.add_argument("--max-seconds", type=float, default=0.1, help="cpu: timed seconds")
    p.add_argument("--sampler", default="gp-ucb")
    p.add_argument("--host-cores", type=int, default=16, help="modelled: a host's cores")
    p.add_argument("--server-cores", type=int, default=192,
                   help="modelled: the eight-card server's cores")
    p.add_argument("--server-cards", type=int, default=8)
    p.add_argument("--max-in-flight", type=int, default=32,
                   help="modelled: trials in flight at most (each is a thread here)")
    p.add_argument("--study", default="studies/qwen25_7b_decode_910b2.json",
                   help="batch: the simulator study")
    p.add_argument("--in-flight", default="2,16", help="batch: trials in flight, against 1")
    p.add_argument("--arms", default="host-serial,host-pool,server-serial,server-pool",
                   help="layer: of host-/server- serial, pool, pool-small-chunks")
    p.add_argument("--studies", default="decode,prefill", help="layer: decode, prefill")
    p.add_argument("--json", default=None, help="write the rows here")
    args = p.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if args.part == "cpu":
        result = cpu_part(args)
        print_cpu(result)
    elif args.part == "batch":
        result = batch_part(args)
        print_batch(result)
    elif args.part == "layer":
        result = layer_part(args)
        print_layer(result)
    else:
        result = modelled_part(args)
        print_modelled(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
