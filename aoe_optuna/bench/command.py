"""Sampler benchmark: samplers x spaces x seeds, against exhaustive optima.

``aoe-tune bench --space studies/qwen25_7b_decode_910b2.json
--space benchmark_hub:gemm_RTX_2080_Ti --sampler random --sampler tpe
--sampler 'gp:{"_seeds": 5, "_budget": 50}' --budgets 25,50,100 --out bench_out``

A space is a study spec (its exhaustive optimum by enumeration on the
simulator) or a recorded Kernel Tuner cache file (replayed; Kernel Tuner's own
strategies run on it too when ``kernel_tuner`` is installed): a local file, or
``benchmark_hub:NAME`` for one of the recorded spaces of AutoTuningAssociation's
benchmark_hub, downloaded once with a pinned checksum
(:mod:`aoe_optuna.backends.replay.hub`). A sampler is a
registry name, optionally ``name:JSON`` with its keyword arguments; the
reserved keys ``_seeds`` and ``_budget`` lower that sampler's seed count or
budget (for slow samplers), and ``_prior`` ("on", "shuffled", "off") says what a
sampler that takes a prior gets on a space given ``--prior-space``: the prior,
its values shuffled over its configs, or none. Writes ``results.json`` (raw runs and summaries),
``report.md`` and one ``<space>.png`` convergence plot per space.

A first argument that names one of :data:`ANALYSES` runs that analysis of
bench runs instead (``aoe-tune bench compare --help``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aoe_optuna.backends.replay.hub import HUB_FILES, HubError, is_hub, recorded_space
from aoe_optuna.bench import kernel_tuner_side
from aoe_optuna.bench.exhaustive import (
    Exhaustive,
    cache_key,
    file_digest,
    load_cached,
    replay_exhaustive,
    simulator_exhaustive,
    simulator_fingerprint,
    store_cached,
)
from aoe_optuna.bench.seed_run import Case, RunResult, Task, run_tasks
from aoe_optuna.bench.tables import markdown, summarise_all
from aoe_optuna.samplers.registry import takes_prior

ANALYSES = {  # aoe-tune bench NAME ...: module (its main(argv))
    "compare": "aoe_optuna.bench.compare",
    "noise-floor": "aoe_optuna.bench.noise_floor",
    "missed-optimum": "aoe_optuna.bench.missed_optimum",
    "diagnose": "aoe_optuna.bench.diagnose",
    "guard": "aoe_optuna.bench.guard",
    "race": "aoe_optuna.bench.race_reruns",
}
ANALYSES_HELP = """\
examples:
  # reinforce with a pretrained policy against gp-ucb, seeds 80-119, scored at 100 measurements
  aoe-tune bench --space studies/qwen25_7b_decode_910b2.json \\
      --sampler 'reinforce:{"policy": "studies/policies/qwen_holdout_seed.safetensors"}' \\
      --sampler gp-ucb --seeds 40 --first-seed 80 --budgets 100 --out /tmp/w/head120
  # one sampler on the space with build failures, into a folder per version of the code
  aoe-tune bench --space studies/qwen25_7b_decode_910b2_hidden.json --sampler reinforce \\
      --budgets 500 --out /tmp/w/new

analyses of bench runs (aoe-tune bench NAME --help for each):
  compare         two samplers of a bench run, seed for seed (W/T/L, sign test)
  noise-floor     the incumbent metric's floor under noise, and the runs on it
  missed-optimum  how near the runs that missed the optimum came to it
  diagnose        the noise-free quality of every proposal (reruns the runs)
  guard           a sampler change against the stored per-seed reference
                  (docs/bench_reference.json): names every space made worse
  race            a search with recorded noise, then its winners' race rerun on it:
                  the certified winner against the argmin of single measurements
"""
DEFAULT_BUDGETS = (25, 50, 100)
DEFAULT_SEEDS = 20
INFEASIBLE_CAP_PER_MEASUREMENT = 50


class BenchError(ValueError):
    """Bad benchmark arguments; the message names the argument and what was expected."""


def parse_sampler(text: str) -> tuple[str, dict[str, Any]]:
    """``"tpe"`` or ``'gp-ucb:{"beta": 3.84}'`` -> (name, kwargs)."""
    name, sep, rest = text.partition(":")
    if not sep:
        return name, {}
    try:
        kwargs = json.loads(rest)
    except json.JSONDecodeError as exc:
        raise BenchError(f"--sampler {text!r}: expected NAME:JSON-object ({exc.msg})") from None
    if not isinstance(kwargs, dict):
        raise BenchError(f"--sampler {text!r}: expected a JSON object after the colon")
    return name, kwargs


PRIOR_USES = ("on", "shuffled", "off")


def sampler_label(name: str, kwargs: dict[str, Any]) -> str:
    shown = {k: v for k, v in kwargs.items() if not k.startswith("_")}
    label = name + (" " + json.dumps(shown, sort_keys=True) if shown else "")
    prior = kwargs.get("_prior")
    return label if prior is None else f"{label} [prior {prior}]"


def prior_pairs(spaces: list[str], priors: list[str] | None) -> list[str | None]:
    """The ``--prior-space`` of each ``--space``, in order ('' or 'none': no prior)."""
    if not priors:
        return [None] * len(spaces)
    if len(priors) != len(spaces):
        raise BenchError(f"--prior-space: expected one per --space ({len(spaces)}; '' or "
                         f"'none' for a space without one), got {len(priors)}")
    return [None if p in ("", "none") else p for p in priors]


def exhaustive_for(case: Case, cache_dir: Path | None) -> Exhaustive:
    """The case's exhaustive optimum and distribution, from the disk cache when there."""
    if case.kind == "replay":
        from aoe_optuna.backends.replay.backend import load_recorded, replay_space

        key = cache_key({"replay": file_digest(case.path), "recorded_only": True})
        hit = load_cached(key, cache_dir)
        if hit is not None:
            return hit
        recorded = load_recorded(Path(case.path))
        result = replay_exhaustive(recorded, replay_space(recorded))
    else:
        from aoe_optuna.spec.backend import make_backend
        from aoe_optuna.spec.loader import load_spec

        spec = load_spec(case.path)
        key = cache_key({"spec": spec.canonical(), "model": simulator_fingerprint()})
        hit = load_cached(key, cache_dir)
        if hit is not None:
            return hit
        backend = make_backend(spec)
        if not hasattr(backend, "latency"):
            raise BenchError(f"{case.path}: backend {spec.backend['name']!r} has no vectorised "
                             "latency(); the exhaustive optimum needs the simulator")
        result = simulator_exhaustive(spec.space, spec.workload, backend)
    store_cached(key, result, cache_dir)
    return result


def space_file(text: str) -> str:
    """A ``--space`` as a local file: ``benchmark_hub:NAME`` fetched, a path as it is."""
    return str(recorded_space(text)) if is_hub(text) else text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aoe-tune bench", description=__doc__.split("\n\n")[0],
                                epilog=ANALYSES_HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--space", action="append", required=True,
                   help="study spec (.json/.toml), Kernel Tuner cache (.json/.json.gz), or "
                   f"benchmark_hub:NAME (downloaded once; NAME one of {', '.join(HUB_FILES)})")
    p.add_argument("--prior-space", action="append", default=None,
                   help="the prior of the --space at the same position: another recording "
                   "of the same kernel (a cache file or benchmark_hub:NAME), a spec whose "
                   "simulator is the prior, or a knowledge base (aoe_kb.json) whose winners "
                   "of the op are ('none' for a space without one; repeatable)")
    p.add_argument("--sampler", action="append", default=None,
                   help="registry name, optionally NAME:JSON kwargs (repeatable)")
    p.add_argument("--sampler-file", help="JSON file: a list of NAME or {name: kwargs} items")
    p.add_argument("--seeds", type=int, default=DEFAULT_SEEDS)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)),
                   help="measurement budgets to report, comma-separated; runs go to the largest")
    p.add_argument("--max-infeasible", type=int, default=None,
                   help=f"infeasible proposals per run before it stops "
                        f"(default {INFEASIBLE_CAP_PER_MEASUREMENT} x budget)")
    p.add_argument("--kernel-tuner", default=",".join(kernel_tuner_side.STRATEGIES),
                   help="Kernel Tuner strategies on recorded spaces ('' for none)")
    p.add_argument("--noise", choices=("none", "recorded"), default="none",
                   help="a recorded space's measurements: each config's recorded mean "
                   "(none, the default) or drawn from its recorded repeats, seeded per run "
                   "and scored by the recorded mean (recorded)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (seeds in parallel)")
    p.add_argument("--out", default="bench_out", help="output folder")
    p.add_argument("--cache-dir", default=None, help="exhaustive-optimum cache folder")
    p.add_argument("--fresh", action="store_true",
                   help="ignore runs already in OUT/runs.jsonl (by default they are reused: "
                        "an interrupted benchmark resumes, and several invocations merge)")
    return p


def _samplers(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    items: list[tuple[str, dict[str, Any]]] = [parse_sampler(s) for s in args.sampler or []]
    if args.sampler_file:
        try:
            doc = json.loads(Path(args.sampler_file).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise BenchError(
                f"{args.sampler_file}: expected a JSON list of samplers ({exc})"
            ) from None
        for entry in doc if isinstance(doc, list) else [None]:
            if isinstance(entry, str):
                items.append((entry, {}))
            elif isinstance(entry, dict) and len(entry) == 1:
                name, kw = next(iter(entry.items()))
                items.append((name, dict(kw)))
            else:
                raise BenchError(f"{args.sampler_file}: expected a list of NAME or "
                                 f"{{NAME: kwargs}} items, got {entry!r}")
    return items or [("random", {}), ("tpe", {})]


def missing_dependencies() -> list[str]:
    """Optional packages a full benchmark run needs (matplotlib), not importable here."""
    missing = []
    for module in ("matplotlib",):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return missing


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ANALYSES:
        return int(importlib.import_module(ANALYSES[argv[0]]).main(argv[1:]))
    args = build_parser().parse_args(argv)
    try:
        budgets = sorted({int(b) for b in args.budgets.split(",") if b.strip()})
    except ValueError:
        print(f"--budgets: expected comma-separated integers, got {args.budgets!r}")
        return 2
    if not budgets or budgets[0] < 1 or args.seeds < 1:
        print("--budgets and --seeds: expected positive integers")
        return 2
    try:
        samplers = _samplers(args)
    except BenchError as exc:
        print(exc)
        return 2
    missing = missing_dependencies()
    if missing:  # the plots come after every run: say so before the first one
        print(f"aoe-tune bench needs {', '.join(missing)} for its plots: "
              "pip install -e '.[bench]'", file=sys.stderr)
        return 2
    top = budgets[-1]
    cap = args.max_infeasible or INFEASIBLE_CAP_PER_MEASUREMENT * top
    cache_dir = Path(args.cache_dir) if args.cache_dir else None
    try:
        priors = prior_pairs(args.space, args.prior_space)
        for name, kwargs in samplers:
            use = kwargs.get("_prior", "on")
            if use not in PRIOR_USES:
                raise BenchError(f"--sampler {name}: _prior: expected one of "
                                 f"{', '.join(PRIOR_USES)}, got {use!r}")
    except BenchError as exc:
        print(f"aoe-tune bench: error: {exc}", file=sys.stderr)
        return 2
    try:
        cases = [Case.from_path(space_file(p), prior=None if q is None else space_file(q),
                                 noise=args.noise)
                 for p, q in zip(args.space, priors, strict=True)]
    except HubError as exc:
        print(f"aoe-tune bench: error: --space {exc}", file=sys.stderr)
        return 2
    for c in cases:
        for path, option in ((c.path, "--space"),
                             (None if c.prior is None else c.prior.path, "--prior-space")):
            if path is not None and not Path(path).is_file():
                print(f"aoe-tune bench: error: {option} {path}: expected an existing spec or "
                      "cache file", file=sys.stderr)
                return 2
    shuffled = [n for n, kw in samplers if kw.get("_prior") == "shuffled"]
    spec_priors = [c.prior for c in cases
                   if c.prior is not None and c.prior.kind in ("spec", "kb")]
    if shuffled and spec_priors:
        what = "a knowledge base's" if spec_priors[0].kind == "kb" else "a simulator's"
        print(f"aoe-tune bench: error: --prior-space {spec_priors[0].path}: {what} prior "
              "has no recorded values to shuffle; expected _prior 'on' or 'off' with it",
              file=sys.stderr)
        return 2
    if len({c.name for c in cases}) < len(cases):
        print("aoe-tune bench: error: --space: expected each space (with its prior) once",
              file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    exhaustive: dict[str, Exhaustive] = {}
    for c in cases:
        t0 = time.perf_counter()
        exhaustive[c.name] = exhaustive_for(c, cache_dir)
        ex = exhaustive[c.name]
        print(f"{c.name}: {ex.n_feasible:,} feasible, optimum {ex.optimum:.6g} s "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
        if c.kind == "replay":
            from aoe_optuna.bench.seed_run import build_case

            print(f"  measurements: {build_case(c).evaluator.backend.noise_note()}", flush=True)
    tasks: list[Task] = []
    for c in cases:
        for name, kwargs in samplers:
            kw = {k: v for k, v in kwargs.items() if not k.startswith("_")}
            seeds = int(kwargs.get("_seeds", args.seeds))
            budget = int(kwargs.get("_budget", top))
            use = kwargs.get("_prior", "on") if c.prior is not None and takes_prior(name) \
                else "off"
            for seed in range(args.first_seed, args.first_seed + seeds):
                tasks.append(Task(c, name, tuple(sorted(kw.items())), seed, budget,
                                  args.max_infeasible or INFEASIBLE_CAP_PER_MEASUREMENT * budget,
                                  sampler_label(name, kwargs), use))
    strategies = [s for s in args.kernel_tuner.split(",") if s.strip()]
    kt_cases = [c for c in cases if c.kind == "replay"]
    if strategies and kt_cases and not kernel_tuner_side.available():
        print("kernel_tuner is not installed: no Kernel Tuner rows (pip install kernel-tuner)")
        strategies = []
    start = time.perf_counter()
    log = out / "runs.jsonl"
    done = [] if args.fresh else load_runs(log)
    if args.fresh and log.exists():
        log.unlink()
    have = {(r.case, r.sampler, r.seed, r.budget) for r in done}

    def progress(r: RunResult) -> None:
        with log.open("a") as fh:
            fh.write(json.dumps(r.to_dict()) + "\n")
        print(f"  {r.case} {r.sampler} seed {r.seed}: {len(r.costs)} measured, "
              f"{r.n_infeasible} infeasible, {r.wall_s:.1f} s ({r.stopped})", flush=True)

    tasks = [t for t in tasks if (t.case.name, t.label, t.seed, t.budget) not in have]
    runs = done + run_tasks(tasks, jobs=args.jobs, progress=progress)
    kt_tasks = [(c, s, seed, top) for c in kt_cases for s in strategies
                for seed in range(args.first_seed, args.first_seed + args.seeds)
                if (c.name, kernel_tuner_side.PREFIX + s, seed, top) not in have]
    runs += _run_kt(kt_tasks, args.jobs, progress)
    names = {c.name for c in cases}
    runs = [r for r in runs if r.case in names]
    summary = summarise_all(runs, exhaustive, budgets)
    from aoe_optuna.bench.plots import convergence_plot

    plots = [str(convergence_plot(c.name, runs, exhaustive[c.name], out / f"{c.name}.png"))
             for c in cases]
    report = markdown(summary, exhaustive, budgets, f"{INFEASIBLE_CAP_PER_MEASUREMENT} x budget"
                      if args.max_infeasible is None else str(cap))
    (out / "report.md").write_text(report)
    raw = {
        "argv": argv,
        "budgets": budgets,
        "infeasible_cap": cap,
        "cases": {c.name: {"path": c.path, "kind": c.kind,
                           "prior": None if c.prior is None else c.prior.path,
                           "n_feasible": exhaustive[c.name].n_feasible,
                           "optimum_cost_s": exhaustive[c.name].optimum,
                           "best_config": exhaustive[c.name].best_config} for c in cases},
        "summary": summary,
        "runs": [r.to_dict() for r in runs],
        "wall_s": time.perf_counter() - start,
    }
    (out / "results.json").write_text(json.dumps(raw, indent=1, default=str))
    print(report)
    print(f"wrote {out / 'results.json'}, {out / 'report.md'}, {', '.join(plots)}")
    return 0


def load_runs(path: Path) -> list[RunResult]:
    """Runs recorded by earlier invocations (one JSON object per line)."""
    if not path.is_file():
        return []
    runs = []
    for line in path.read_text().splitlines():
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by an interruption
        d["costs"] = [float("nan") if c is None else c for c in d["costs"]]
        if d.get("true_costs") is not None:
            d["true_costs"] = [float("inf") if c is None else c for c in d["true_costs"]]
        runs.append(RunResult(**d))
    return runs


def _run_kt(tasks: list[tuple[Case, str, int, int]], jobs: int, progress: Any) -> list[RunResult]:
    if not tasks:
        return []
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    results: list[RunResult] = []
    with ProcessPoolExecutor(max_workers=max(jobs, 1),
                             mp_context=mp.get_context("spawn")) as pool:
        for r in pool.map(kernel_tuner_side.run_kt_task, tasks):
            results.append(r)
            progress(r)
    return results
