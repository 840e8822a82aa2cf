#!/usr/bin/env python
"""GPUCBSampler overhead: seconds per suggestion after N completed trials, and peak memory.

The N trials are distinct random feasible configs of a study spec (valued by
the simulator's noise-free cost, tokens/s) or of a recorded Kernel Tuner
space (valued by the recorded time; recorded failures are told FAIL), added
to an in-memory study; then the sampler is asked ``--asks`` times (each ask
told with its value, so N grows by one per ask). Reports the median, mean and
max wall time per suggestion (by default the sampler fits its hyperparameters
on every ask below 300 completed trials and on every 3rd above, where the max
is a fit), the CPU seconds of the same asks (the sampler runs on one thread,
so on a machine shared with other work they are what a suggestion costs it)
the seconds its threads waited for a core while ready to run and the times
they blocked (Linux's schedstat and context switches: on a machine loaded by
other work, wall = CPU + that wait, and a sampler that blocked on a thread,
a lock or storage would show here), and the peak
resident memory (ru_maxrss). ``--kwargs`` passes sampler
arguments; ``--against-kwargs`` times this checkout with other arguments in a
second worker, ask by ask in turn as ``--against`` does.

``--against PYTHON`` times a second checkout side by side: the same study is
built in two worker processes, this interpreter's aoe_optuna and PYTHON's
(e.g. another checkout's .venv/bin/python), and they are asked in turn, ask by
ask (alternating which goes first), so both see the same machine load. Each
prints its own figures, then the ratio of the medians and how many proposals
were identical.

    python scripts/bench_gp_ucb_overhead.py --spec studies/qwen25_7b_decode_910b2.json --n 200
    python scripts/bench_gp_ucb_overhead.py --space ../shared/spaces/gemm_RTX_2080_Ti.json.gz \\
        --n 200 --asks 10 --against ../base/.venv/bin/python
    python scripts/bench_gp_ucb_overhead.py --spec studies/qwen25_7b_decode_910b2_compile.json \\
        --n 1000 --asks 7 --kwargs '{"model": {"refit_every": 1}}'
    python scripts/bench_gp_ucb_overhead.py --spec studies/qwen25_7b_decode_catlass_910b2.json \\
        --n 1000 --asks 9 --against-kwargs '{"search": {"fast_from": null}}'
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _study(args: argparse.Namespace) -> tuple[Any, Any, Callable[[np.ndarray], float | None]]:
    """(study with N told trials, space, index row -> value or None for a failure)."""
    import optuna

    from aoe_optuna.samplers.gp_ucb import GPUCBSampler

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    context: dict[str, Any] = {}
    if args.spec:
        from aoe_optuna.bench.exhaustive import simulator_costs
        from aoe_optuna.spec.backend import make_backend
        from aoe_optuna.spec.loader import load_spec

        spec = load_spec(args.spec)
        space, backend = spec.space, make_backend(spec)
        # the workload and SoC, as a study made by aoe-tune gives them
        context = {"workload": spec.workload, "profile": spec.profile}

        def value(row: np.ndarray) -> float | None:
            return float(1.0 / simulator_costs(space, spec.workload, backend, row[None, :])[0])
    else:
        from aoe_optuna.bench.seed_run import Case, build_case

        built = build_case(Case.from_path(args.space))
        space, backend = built.space, built.evaluator.backend

        def value(row: np.ndarray) -> float | None:
            m = backend.measure(space.config(row))
            return 1.0 / m.latency_s if m.ok and m.latency_s else None

    rows = space.sample_feasible(args.n, np.random.default_rng(args.seed))
    dists = space.distributions()
    sampler = GPUCBSampler(space=space, seed=args.seed, **context, **args.kwargs)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for row in rows:
        v = value(row)
        state = optuna.trial.TrialState.COMPLETE if v is not None else optuna.trial.TrialState.FAIL
        study.add_trial(optuna.trial.create_trial(params=space.config(row), distributions=dists,
                                                  value=v, state=state))
    return study, space, value


def _scheduling() -> tuple[float, int]:
    """(seconds this process's threads have waited on a run queue, ready to run; times
    they gave up the core themselves: blocked on a lock, a file, another thread), from
    /proc (0.0, 0 where the kernel does not give them)."""
    queued, blocked = 0, 0
    try:
        for task in Path("/proc/self/task").iterdir():
            queued += int((task / "schedstat").read_text().split()[1])
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    blocked += int(line.split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0, 0
    return queued / 1e9, blocked


def worker(args: argparse.Namespace) -> None:
    """Answer "ask" lines on stdin with one JSON line each: seconds and the proposal."""
    import optuna

    study, space, value = _study(args)
    dists = space.distributions()
    print(json.dumps({"n_feasible": int(space.n_feasible)}), flush=True)
    for line in sys.stdin:
        if line.strip() != "ask":
            break
        t, cpu, (queued, blocked) = time.perf_counter(), time.process_time(), _scheduling()
        trial = study.ask(dists)
        seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
        after = _scheduling()
        queued, blocked = after[0] - queued, after[1] - blocked
        v = value(space.index(trial.params))
        if v is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, v)
        print(json.dumps({"s": seconds, "cpu": cpu, "queued": queued, "blocked": blocked,
                          "params": trial.params}, default=str),
              flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mb": peak_mb}), flush=True)


class Worker:
    """One worker process: a checkout's sampler on its own copy of the study."""

    def __init__(self, name: str, python: str, argv: list[str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker", *argv],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        self.n_feasible = self._read()["n_feasible"]
        self.times: list[float] = []
        self.cpu: list[float] = []
        self.queued: list[float] = []
        self.blocked = 0
        self.proposals: list[dict[str, Any]] = []

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"bench_gp_ucb_overhead: the {self.name} worker exited "
                             f"(code {self.proc.wait()})")
        return json.loads(line)

    def ask(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("ask\n")
        self.proc.stdin.flush()
        out = self._read()
        self.times.append(out["s"])
        self.cpu.append(out["cpu"])
        self.queued.append(out["queued"])
        self.blocked += out["blocked"]
        self.proposals.append(out["params"])

    def close(self) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        peak = self._read()["peak_mb"]
        self.proc.wait()
        return float(peak)


def _summary(name: str, times: list[float], cpu: list[float], queued: list[float],
             blocked: int, n: int, peak_mb: float) -> str:
    later = times[1:] or times
    return (f"{name}: seconds per suggestion at {n}..{n + len(times) - 1} completed: "
            f"median {statistics.median(times):.3f}, mean after the first "
            f"{statistics.mean(later):.3f}, max after the first {max(later):.3f}, "
            f"first {times[0]:.3f} (caches, a cold fit); CPU seconds: median "
            f"{statistics.median(cpu):.3f}, mean after the first "
            f"{statistics.mean(cpu[1:] or cpu):.3f}; waiting for a core: median "
            f"{statistics.median(queued):.3f}; blocked {blocked} times in all; "
            f"peak RSS {peak_mb:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="\n".join(__doc__.splitlines()[-8:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--spec", help="study spec (simulator-valued)")
    where.add_argument("--space", help="recorded Kernel Tuner cache file (.json or .json.gz)")
    ap.add_argument("--n", type=int, default=200, help="completed trials before timing")
    ap.add_argument("--asks", type=int, default=7, help="asks timed (>= 4 covers a refit)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kwargs", type=json.loads, default={},
                    help='GPUCBSampler arguments as a JSON object, '
                         'e.g. \'{"model": {"refit_every": 1}}\'')
    ap.add_argument("--against", metavar="PYTHON",
                    help="another checkout's interpreter, timed side by side")
    ap.add_argument("--against-kwargs", type=json.loads, default=None, metavar="JSON",
                    help="time this checkout with these GPUCBSampler arguments side by side "
                         "(instead of --kwargs), e.g. the code's earlier behaviour")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    for path in (args.spec, args.space):
        if path is not None and not Path(path).is_file():
            ap.exit(2, f"bench_gp_ucb_overhead: {path}: no such file\n")
    if args.worker:
        worker(args)
        return

    argv = [a for a in sys.argv[1:]]
    for option in ("--against", "--against-kwargs"):
        if option in argv:
            i = argv.index(option)
            del argv[i : i + 2]
    t0 = time.perf_counter()
    workers = [Worker("this checkout", sys.executable, argv)]
    if args.against:
        workers.append(Worker(f"against ({args.against})", args.against, argv))
    elif args.against_kwargs is not None:
        other = [a for a in argv]
        if "--kwargs" in other:
            del other[other.index("--kwargs") : other.index("--kwargs") + 2]
        workers.append(Worker(f"against {json.dumps(args.against_kwargs)}", sys.executable,
                              [*other, "--kwargs", json.dumps(args.against_kwargs)]))
    print(f"{workers[0].n_feasible:,} feasible configs; {args.n} trials added "
          f"in {time.perf_counter() - t0:.1f} s")
    for k in range(args.asks):
        for w in workers if k % 2 == 0 else workers[::-1]:
            w.ask()
    for w in workers:
        print(_summary(w.name, w.times, w.cpu, w.queued, w.blocked, args.n, w.close()))
    if len(workers) == 2:
        new, old = workers
        same = sum(a == b for a, b in zip(new.proposals, old.proposals, strict=True))
        ratio = statistics.median(new.times) / statistics.median(old.times)
        cpu_ratio = statistics.median(new.cpu) / statistics.median(old.cpu)
        print(f"median ratio this/against {ratio:.2f} (CPU {cpu_ratio:.2f}); "
              f"identical proposals {same}/{args.asks}")


if __name__ == "__main__":
    main()
