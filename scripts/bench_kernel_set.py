"""Kernel sets for a serving mix on the simulator, judged on shapes the tuning never saw.

For Qwen2.5-7B on the 910B2 over catlass's space (studies/qwen25_7b_*_catlass_910b2.json),
decode at every batch size 1..256 and prefill of every length 128..8192, each doubling
equally likely (``"weighting": "log"``):

* ``joint``: ``aoe-tune kernel-set``'s tuner (one model per operator over config and
  shape, one budget over the operators), run to each budget in turn in one SQLite
  storage (a larger budget resumes the run, as the command does); its sets of K = 1..8
  kernels per operator, as the model chooses them;
* ``separate``: each tuning shape of each operator in a study of its own
  (``aoe-tune operators`` on the tuning shapes as a shape list, the gradient
  scheduler, GP-UCB), every shape's winner shipped and a held-out M served by the
  nearest tuned shape's winner (the knowledge base's rule);
* ``nearest`` and ``pow2``, given K kernels' worth of tuned shapes, each at its
  exhaustive optimum (the best a per-shape tuning could ship): the weighted quantiles
  (i + 0.5) / K of the mix, a held-out M served by the nearest in log M; or K powers
  of two spread over the range, an M served by the smallest one at or above it;
* ``tuned``: the same two rules with the same shapes, each shape tuned instead by a
  GP-UCB study of its own (the simulator's noise drawn per seed), the kernel set's
  budget split evenly over every operator's shapes: what per-shape tuning ships for
  the measurements the kernel set spends (``--budgets``; ``--ks`` the K to tune for).
  A shape's study is cached in ``--folder``/shapes, and a smaller share of the
  budget reads a prefix of it (GP-UCB proposes one config after another).

Every figure is the true (noise-free) weighted latency of the mix's held-out shapes:
per operator, 24 strata of equal weight of the M that are not tuning shapes, one M
drawn from each (seed 0), each weighted by its stratum; summed over the operators
whose M varies (prefill's lm_head runs at M = 1 only). ``/opt`` divides by every
held-out M at its exhaustive optimum over the space. The exhaustive optima take
10-20 s per shape and are cached in ``--oracle-dir``, under the simulator's fingerprint.

    nice .venv/bin/python scripts/bench_kernel_set.py oracle --cases decode,prefill
    nice .venv/bin/python scripts/bench_kernel_set.py joint --cases decode --seeds 0,1,2 \\
        --budgets 500,1000 --out /tmp/kset_joint.jsonl
    nice .venv/bin/python scripts/bench_kernel_set.py separate --cases decode --seeds 0 \\
        --budget 3200 --out /tmp/kset_separate.jsonl
    nice .venv/bin/python scripts/bench_kernel_set.py tuned --cases decode --seeds 0 \\
        --budgets 500 --out /tmp/kset_tuned.jsonl
    .venv/bin/python scripts/bench_kernel_set.py report /tmp/kset_joint.jsonl \\
        /tmp/kset_separate.jsonl /tmp/kset_tuned.jsonl
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.bench.exhaustive import simulator_fingerprint
from aoe_optuna.kernel_set import outcome
from aoe_optuna.kernel_set.acquisition import shape_weights
from aoe_optuna.kernel_set.budget_split import FLOOR
from aoe_optuna.kernel_set.expected_time import expected_time_s
from aoe_optuna.kernel_set.operator_mix import OperatorMix, from_model
from aoe_optuna.kernel_set.selection import K_MAX, dispatch
from aoe_optuna.kernel_set.tuner import (
    CHECK_REACH,
    RETILE,
    VERIFY,
    KernelSetTuner,
    TunerOptions,
)
from aoe_optuna.kernel_set.tuning_shapes import DEFAULT_COUNT, tuning_shapes
from aoe_optuna.operators.scheduler import make_scheduler
from aoe_optuna.operators.state import best_measured
from aoe_optuna.operators.tuner import OperatorTuner, Snapshot
from aoe_optuna.operators.tuner import TunerOptions as OperatorOptions
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.format import read_document
from aoe_optuna.spec.loader import StudySpec, load_spec, spec_from_dict
from aoe_optuna.workload.shape_mix import range_mix

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "decode": (ROOT / "studies" / "qwen25_7b_decode_catlass_910b2.json",
               {"batch": {"low": 1, "high": 256, "weighting": "log"}}),
    "prefill": (ROOT / "studies" / "qwen25_7b_prefill_catlass_910b2.json",
                {"seq_len": {"low": 128, "high": 8192, "weighting": "log"}}),
}
STRATA = 24


# ------------------------------------------------------------------ shapes and truth
class Case:
    """One workload: its spec, simulator, operators, tuning shapes and held-out shapes."""

    def __init__(self, name: str, oracle_dir: Path, ops: Sequence[str] = ()) -> None:
        path, mix = CASES[name]
        self.name = name
        self.spec = load_spec(str(path))
        self.sim = make_backend(self.spec)
        steps = from_model(self.spec, range_mix(mix, "bench"))
        self.mix = mix
        self.ops = [op for op in steps.operators if not ops or op.name in ops]
        self.tuned = [tuning_shapes(op.m, op.weight, DEFAULT_COUNT, expected_time_s(self.spec, op))
                      for op in self.ops]
        self.held = [held_out(op, t) for op, t in zip(self.ops, self.tuned, strict=True)]
        # keyed by the simulator's code and profiles: a model changed since leaves the
        # old optima in their own folder instead of being read as today's
        self.oracle_dir = oracle_dir / simulator_fingerprint()
        self._rows: np.ndarray | None = None
        self._cols: dict[str, np.ndarray] | None = None

    def varying(self) -> list[int]:
        return [i for i, op in enumerate(self.ops) if op.varies]

    def true(self, params: dict[str, Any], op: OperatorMix, ms: Sequence[int]) -> np.ndarray:
        row = self.spec.space.index(params)[None, :]
        cols = self.spec.space.columns(row)
        return np.array([float(self.sim.latency(cols, op.gemm(int(m)))[0]) for m in ms])

    def oracle(self, op: OperatorMix, m: int) -> tuple[float, dict[str, Any]]:
        """The exhaustive optimum at (op, m): (latency s, config), cached on disk."""
        f = self.oracle_dir / f"{self.name}_{op.N}x{op.K}_M{m}.json"
        if not f.exists():
            f.parent.mkdir(parents=True, exist_ok=True)
            if self._rows is None:
                self._rows = self.spec.space.all_feasible()
                self._cols = self.spec.space.columns(self._rows)
            lat = np.asarray(self.sim.latency(self._cols, op.gemm(m)), dtype=float)
            lat = np.where(np.isnan(lat), np.inf, lat)
            k = int(np.argmin(lat))
            # atomic: another benchmark process may read the cache meanwhile
            write_atomic(f, json.dumps({"latency_s": float(lat[k]),
                                        "config": self.spec.space.config(self._rows[k])}))
        doc = json.loads(f.read_text())
        return float(doc["latency_s"]), doc["config"]

    def oracle_shapes(self, i: int) -> list[int]:
        """Every M whose optimum the figures need: held-out, quantile and power-of-two."""
        op = self.ops[i]
        ms = {m for m, _ in self.held[i]}
        for k in range(1, K_MAX + 1):
            ms |= set(quantile_shapes(op, k))
        ms |= set(powers_of_two(op))
        return sorted(ms)

    def optimum_s(self) -> float:
        return sum(w * self.oracle(self.ops[i], m)[0] for i in self.varying()
                   for m, w in self.held[i])


def held_out(op: OperatorMix, tuned: np.ndarray, strata: int = STRATA) -> list[tuple[int, float]]:
    """One M from each of ``strata`` slices of equal weight of the M that are not tuned,
    with its slice's weight."""
    if not op.varies:
        return []
    keep = ~np.isin(op.m, tuned)
    m, w = op.m[keep], op.weight[keep]
    cum = np.cumsum(w) / w.sum()
    rng = np.random.default_rng(0)
    edges = np.searchsorted(cum, np.arange(1, strata) / strata)
    return [(int(rng.choice(pm)), float(pw.sum()))
            for pm, pw in zip(np.split(m, edges), np.split(w, edges), strict=True) if len(pm)]


def quantile_shapes(op: OperatorMix, k: int) -> list[int]:
    cum = np.cumsum(op.weight) / op.weight.sum()
    return sorted({int(op.m[min(int(np.searchsorted(cum, (i + 0.5) / k)), len(op.m) - 1)])
                   for i in range(k)})


def powers_of_two(op: OperatorMix) -> list[int]:
    """The powers of two from the first at or above the smallest M to the first at or
    above the largest."""
    p = 1
    while p < op.m[0]:
        p *= 2
    out = [p]
    while out[-1] < op.m[-1]:
        out.append(out[-1] * 2)
    return out


def pow2_buckets(op: OperatorMix, k: int) -> list[int]:
    """K of the powers of two, spread evenly in log2, the largest always among them."""
    powers = powers_of_two(op)
    if k >= len(powers):
        return powers
    idx = np.round(np.arange(1, k + 1) * (len(powers) - 1) / k).astype(int)
    return [powers[i] for i in sorted(set(idx.tolist()))]


# ------------------------------------------------------------------ the baselines
def baselines(case: Case) -> dict[str, list[float]]:
    """Held-out weighted latency of the nearest-tuned-shape rule and of power-of-two
    buckets, K = 1..K_MAX, every tuned shape at its exhaustive optimum."""
    out: dict[str, list[float]] = {"nearest": [], "pow2": []}
    for k in range(1, K_MAX + 1):
        near = bucket = 0.0
        for i in case.varying():
            op = case.ops[i]
            ms = np.array([m for m, _ in case.held[i]])
            ws = np.array([w for _, w in case.held[i]])
            tuned = quantile_shapes(op, k)
            pick = [tuned[int(np.argmin(np.abs(np.log2(m) - np.log2(tuned))))] for m in ms]
            near += sum(w * case.true(case.oracle(op, t)[1], op, [m])[0]
                        for t, m, w in zip(pick, ms, ws, strict=True))
            edges = pow2_buckets(op, k)
            up = [next(p for p in edges if p >= m) for m in ms]
            bucket += sum(w * case.true(case.oracle(op, p)[1], op, [m])[0]
                          for p, m, w in zip(up, ms, ws, strict=True))
        out["nearest"].append(near)
        out["pow2"].append(bucket)
    return out


# ------------------------------------------------------------------ the baselines, tuned
def shape_spec(case: Case, op: OperatorMix, m: int) -> StudySpec:
    """The case's spec with one GEMM of ``op`` at ``m`` as its workload: the study a
    per-shape tuning of that shape runs."""
    path, _ = CASES[case.name]
    doc = copy.deepcopy(read_document(str(path)))
    doc["workload"] = {"shapes": [{"name": f"{op.name}-m{m}", "M": int(m), "K": op.K,
                                   "N": op.N, "dtype": op.dtype, "count": 1}]}
    doc["max_search_time"] = None
    return spec_from_dict(doc, source=f"{path} [{op.name} M={m}]")


def shape_study(case: Case, op: OperatorMix, m: int, budget: int, seed: int,
                folder: Path) -> list[tuple[float, dict[str, Any]]]:
    """A GP-UCB study of one shape, ``budget`` measurements with the simulator's noise
    drawn for ``seed``: (measured cost, 1 / tokens/s, config) of each, in order (cached in
    ``folder``; a shorter budget is a prefix, as GP-UCB proposes one after another)."""
    from aoe_optuna.study.run.objective import MeasurementFailed, suggest_config
    from aoe_optuna.study.session import IN_MEMORY, SamplerRequest, StudySession

    folder.mkdir(parents=True, exist_ok=True)
    f = folder / f"{case.name}_{op.N}x{op.K}_M{m}_s{seed}.json"
    done = json.loads(f.read_text()) if f.exists() else []
    if len(done) >= budget:
        return [(float(v), c) for v, c in done[:budget]]
    spec = shape_spec(case, op, m)
    backend = copy.copy(case.sim)
    backend.seed = int(seed)  # the noise of this seed's measurements
    session = StudySession.open(IN_MEMORY, spec, f"shape-{m}-{seed}",
                                SamplerRequest("gp-ucb", {}, seed),
                                storage=optuna.storages.InMemoryStorage(), backend=backend,
                                enqueue_baseline_now=False)
    study, objective = session.study, session.objective()
    out: list[tuple[float, dict[str, Any]]] = []
    while len(out) < budget:
        trial = study.ask()
        config = suggest_config(trial, session.space)
        try:
            value = objective(trial)
        except optuna.TrialPruned:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            continue
        except MeasurementFailed:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            out.append((float("inf"), dict(config)))
            continue
        study.tell(trial, value)
        out.append((1.0 / value, dict(config)))  # one GEMM: s per token, as its latency
    write_atomic(f, json.dumps(out))
    return out


def tuned_baselines(case: Case, budget: int, seed: int, folder: Path,
                    ks: Sequence[int] = range(1, K_MAX + 1)) -> dict[str, list[float | None]]:
    """The nearest-tuned-shape and power-of-two rules with K kernels' worth of tuned
    shapes per operator, each tuned by a GP-UCB study of its own, the ``budget`` split
    evenly over the shapes of every operator (the kernel set's measurements, per-shape):
    each shape ships its best measured config. K = 1..K_MAX (None: a K not in ``ks``)."""
    out: dict[str, list[float | None]] = {"nearest": [], "pow2": []}
    varying = case.varying()
    for k in range(1, K_MAX + 1):
        if k not in ks:
            out["nearest"].append(None)
            out["pow2"].append(None)
            continue
        totals = {"nearest": 0.0, "pow2": 0.0}
        for i in varying:
            op = case.ops[i]
            ms = np.array([m for m, _ in case.held[i]])
            ws = np.array([w for _, w in case.held[i]])
            for rule, shapes in (("nearest", quantile_shapes(op, k)),
                                 ("pow2", pow2_buckets(op, k))):
                each = max(1, budget // (len(varying) * len(shapes)))
                ship = {}
                for t in shapes:
                    got = shape_study(case, op, t, each, seed, folder)
                    ship[t] = min(got, key=lambda g: g[0])[1]
                if rule == "nearest":
                    serve = [shapes[int(np.argmin(np.abs(np.log2(m) - np.log2(shapes))))]
                             for m in ms]
                else:
                    serve = [next(p for p in shapes if p >= m) for m in ms]
                totals[rule] += sum(w * case.true(ship[t], op, [m])[0]
                                    for t, m, w in zip(serve, ms, ws, strict=True))
        for rule in out:
            out[rule].append(totals[rule])
        print(f"tuned baselines {case.name} s{seed} @{budget}: K={k} " + ", ".join(
            f"{rule} {totals[rule] / case.optimum_s():.4f}" for rule in out), flush=True)
    return out


def run_tuned_baselines(case: Case, seed: int, budget: int, folder: Path, out: Path,
                        ks: Sequence[int]) -> None:
    start = time.time()
    got = tuned_baselines(case, budget, seed, folder, ks)
    _append(out, {"kind": "tuned", "case": case.name, "seed": seed, "budget": budget,
                  "seconds": time.time() - start, "optimum_s": case.optimum_s(), **got})
    opt = case.optimum_s()
    print(f"tuned baselines {case.name} s{seed} @{budget}: " + ", ".join(
        f"K={k} nearest {n / opt:.4f} pow2 {p / opt:.4f}"
        for k, n, p in zip(range(1, K_MAX + 1), got["nearest"], got["pow2"], strict=True)
        if n is not None and p is not None), flush=True)


# ------------------------------------------------------------------ joint
def held_out_of_sets(case: Case, results: list[outcome.OperatorOutcome]) -> dict[str, Any]:
    """Per K, the true held-out weighted latency of the sets (ranges as chosen) and of the
    same K configs dispatched each M to its fastest (k-median reassignment, the model's
    choice of which), and the sets' distinct kernels."""
    sets, kmed, kernels = [], [], []
    for k in range(1, K_MAX + 1):
        total = alt = 0.0
        n = 0
        for i in case.varying():
            r, op = results[i], case.ops[i]
            ms = np.array([m for m, _ in case.held[i]])
            ws = np.array([w for _, w in case.held[i]])
            choice = r.best_for(k)
            rows = dispatch(choice.ranges, ms)
            total += sum(w * case.true(r.configs[row], op, [m])[0]
                         for row, m, w in zip(rows, ms, ws, strict=True))
            chosen = k_median(r.latency_s * op.weight[None, :], choice.rows, k)
            at = np.searchsorted(op.m, ms)
            best = [chosen[int(np.argmin(r.latency_s[chosen][:, j]))] for j in at]
            alt += sum(w * case.true(r.configs[row], op, [m])[0]
                       for row, m, w in zip(best, ms, ws, strict=True))
            n += len(choice.rows)
        sets.append(total)
        kmed.append(alt)
        kernels.append(n)
    return {"sets": sets, "k_median": kmed, "kernels": kernels}


def k_median(cost: np.ndarray, start: Sequence[int], k: int) -> list[int]:
    """K candidates (rows of ``cost``, candidates x cells) minimising the sum over cells of
    the cheapest chosen: the DP's configs, then swaps while one lowers the sum."""
    chosen = list(dict.fromkeys(start))
    rest = [r for r in range(cost.shape[0]) if r not in chosen]
    while len(chosen) < min(k, cost.shape[0]):  # the DP used fewer: add the best
        gain = [cost[[*chosen, r]].min(axis=0).sum() for r in rest]
        chosen.append(rest.pop(int(np.argmin(gain))))

    def total(rows: list[int]) -> float:
        return float(cost[rows].min(axis=0).sum())

    current = total(chosen)
    improved = True
    while improved:
        improved = False
        for i in range(len(chosen)):
            for r in list(rest):
                trial = [*chosen[:i], r, *chosen[i + 1:]]
                value = total(trial)
                if value < current - 1e-15:
                    rest.append(chosen[i])
                    rest.remove(r)
                    chosen, current, improved = trial, value, True
                    break
    return chosen


def run_joint(case: Case, seed: int, budgets: Sequence[int], folder: Path,
              out: Path, verify: float = VERIFY, floor: float = FLOOR,
              reach: float = CHECK_REACH, retile: bool = RETILE,
              round_reach: float = 0.0) -> None:
    storage = optuna.storages.RDBStorage(f"sqlite:///{folder}/{case.name}-s{seed}.db")
    for budget in budgets:
        start = time.time()
        tuner = KernelSetTuner(storage, f"bench-{case.name}", case.spec, case.ops, case.tuned,
                               case.sim, TunerOptions(budget=budget, seed=seed, verify=verify,
                                                         floor=floor, check_reach=reach,
                                                         retile=retile,
                                                         round_reach=round_reach))
        tuner.run()
        spent = time.time() - start
        results = outcome.outcomes(tuner.units)
        figures = held_out_of_sets(case, results)
        predicted = [sum(r.best_for(k).weighted_s for r in results)
                     for k in range(1, K_MAX + 1)]
        row = {"kind": "joint", "case": case.name, "seed": seed, "budget": budget,
               "verify": verify, "floor": floor, "check_reach": reach, "retile": retile,
               "round_reach": round_reach,
               "used": tuner.used,
               "builds": sum(u.study.measured.builds for u in tuner.units),
               "seconds": spent, "optimum_s": case.optimum_s(), "predicted_s": predicted,
               **figures}
        _append(out, row)
        print(json.dumps({k: row[k] for k in ("case", "seed", "budget", "used", "builds")})
              + f" K=4 /opt {row['sets'][3] / row['optimum_s']:.4f}", flush=True)


# ------------------------------------------------------------------ separate studies
def separate_spec(case: Case) -> StudySpec:
    """The case's spec with a shape list for workload: each operator's tuning shapes, each
    counted by its share of the mix (``shape_weights``), so that an operator run tunes
    each in a study of its own and its scheduler weighs them as the mix does."""
    path, _ = CASES[case.name]
    doc = copy.deepcopy(read_document(str(path)))
    rows = []
    total = sum(float(op.weight.sum()) for op in case.ops)
    for op, tuned in zip(case.ops, case.tuned, strict=True):
        share = shape_weights(op.m, op.weight, tuned)
        rows += [{"name": f"{op.name}-m{m}", "M": int(m), "K": op.K, "N": op.N,
                  "dtype": op.dtype, "count": max(1, round(1000 * float(w) / total))}
                 for m, w in zip(tuned.tolist(), share, strict=True)]
    doc["workload"] = {"shapes": rows}
    doc["max_search_time"] = None
    return spec_from_dict(doc, source=f"{path} [tuning shapes]")


def run_separate(case: Case, seed: int, budget: int, out: Path) -> None:
    spec = separate_spec(case)
    trace: list[dict[str, Any]] = []
    last = [-1]

    def on_chunk(tuner: OperatorTuner, snap: Snapshot) -> None:
        used = snap.used + snap.reserve
        if used - last[0] < 40 and used < budget:
            return
        last[0] = used
        winners = {(s.M, s.K, s.N): best_measured(ts)
                   for s, ts in zip(tuner.gemm_shapes, snap.trials, strict=False)}
        total = 0.0
        for i in case.varying():
            op = case.ops[i]
            tuned = [m for m in case.tuned[i] if winners.get((int(m), op.K, op.N))]
            if not tuned:
                return
            for m, w in case.held[i]:
                t = tuned[int(np.argmin(np.abs(np.log2(m) - np.log2(tuned))))]
                params = dict(winners[(int(t), op.K, op.N)].params)
                total += w * case.true(params, op, [m])[0]
        trace.append({"used": used, "held_out_s": total})
        print(f"separate {case.name} s{seed}: {used} measured, held-out / optimum "
              f"{total / case.optimum_s():.4f}", flush=True)

    options = OperatorOptions(budget=budget, scheduler=make_scheduler("gradient"), seed=seed)
    start = time.time()
    OperatorTuner(optuna.storages.InMemoryStorage(), "memory", "bench", spec, options,
                  on_chunk=on_chunk).run()
    _append(out, {"kind": "separate", "case": case.name, "seed": seed, "budget": budget,
                  "seconds": time.time() - start, "optimum_s": case.optimum_s(),
                  "trace": trace})


# ------------------------------------------------------------------ report
def report(paths: Sequence[Path], oracle_dir: Path, ops: Sequence[str] = ()) -> None:
    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines() if line]
    for name in sorted({r["case"] for r in rows}):
        case = Case(name, oracle_dir, ops)
        base = baselines(case)
        opt = case.optimum_s()
        joint = [r for r in rows if r["kind"] == "joint" and r["case"] == name]
        tuned = [r for r in rows if r["kind"] == "tuned" and r["case"] == name]
        print(f"\n### {name}: held-out weighted latency / per-shape optimum "
              f"({opt * 1e6:.1f} us per mean step)\n")
        extra = [(f"{rule} GP-UCB {r['budget']} s{r['seed']}", r[rule]) for r in tuned
                 for rule in ("nearest", "pow2")]
        print("| K | " + " | ".join(f"joint {r['budget']} s{r['seed']}" + _options(r)
                                   for r in joint)
              + "".join(f" | {label}" for label, _ in extra)
              + " | nearest (exh.) | pow2 (exh.) |")
        print("|---" * (len(joint) + len(extra) + 3) + "|")
        for k in range(K_MAX):
            cells = [f"{r['sets'][k] / opt:.4f} ({r['kernels'][k]})" for r in joint]
            cells += ["-" if v[k] is None else f"{v[k] / opt:.4f}" for _, v in extra]
            print(f"| {k + 1} | " + " | ".join(cells)
                  + f" | {base['nearest'][k] / opt:.4f} | {base['pow2'][k] / opt:.4f} |")
        print("\nk-median reassignment of the same configs, K = 4: "
              + ", ".join(f"s{r['seed']}@{r['budget']} {r['k_median'][3] / opt:.4f}"
                          for r in joint))
        print("measurements (builds): " + ", ".join(
            f"s{r['seed']}@{r['budget']} {r['used']} ({r['builds']}), {r['seconds']:.0f} s"
            for r in joint))
        for r in rows:
            if r["kind"] == "separate" and r["case"] == name:
                print(f"\nseparate studies s{r['seed']} (nearest tuned shape, "
                      f"{r['seconds']:.0f} s): " + ", ".join(
                          f"{t['used']}: {t['held_out_s'] / opt:.4f}" for t in r["trace"]))
        paired(rows, name, opt)
        versus_rules(rows, name, opt)


def versus_rules(rows: Sequence[dict[str, Any]], name: str, opt: float) -> None:
    """Per budget and K, the sets against both rules tuned with the same measurements,
    paired per seed: the means over the seeds that have all three, and on how many of
    them the set beats both rules."""
    for budget in sorted({r["budget"] for r in rows if r["kind"] == "tuned"
                          and r["case"] == name}):
        joint = {r["seed"]: r for r in rows if r["kind"] == "joint" and r["case"] == name
                 and r["budget"] == budget}
        tuned = {r["seed"]: r for r in rows if r["kind"] == "tuned" and r["case"] == name
                 and r["budget"] == budget}
        seeds = sorted(set(joint) & set(tuned))
        if not seeds:
            continue
        print(f"\n{budget} measurements, seeds {', '.join(map(str, seeds))}: the sets "
              "against the rules given the same measurements\n")
        print("| K | sets: mean (range) | nearest GP-UCB: mean | pow2 GP-UCB: mean "
              "| seeds where the set beats both |")
        print("|---|---|---|---|---|")
        for k in range(K_MAX):
            have = [s for s in seeds if tuned[s]["nearest"][k] is not None]
            if not have:
                continue
            sets = np.array([joint[s]["sets"][k] for s in have]) / opt
            near = np.array([tuned[s]["nearest"][k] for s in have]) / opt
            pow2 = np.array([tuned[s]["pow2"][k] for s in have]) / opt
            wins = int(((sets < near) & (sets < pow2)).sum())
            print(f"| {k + 1} | {sets.mean():.4f} ({sets.min():.4f}-{sets.max():.4f}) | "
                  f"{near.mean():.4f} | {pow2.mean():.4f} | {wins} of {len(have)} |")


def _options(row: dict[str, Any]) -> str:
    """What a joint row ran with where it differs from the defaults (a row from before
    re-tiling was an option ran without it)."""
    out = ""
    if row.get("verify", 0.0):
        out += f" verify {row['verify']:g}"
    if row.get("check_reach", 0.0):
        out += f" reach {row['check_reach']:g}"
    if row.get("round_reach", 0.0):
        out += f" round reach {row['round_reach']:g}"
    if bool(row.get("retile", False)) != RETILE:
        out += " re-tiled" if row.get("retile") else " no re-tiling"
    return out


def paired(rows: Sequence[dict[str, Any]], name: str, opt: float) -> None:
    """Per seed, the kernel set of 4 and the separate studies of the same seed: the
    measurements the separate studies take to reach the set's held-out latency."""
    separate = {r["seed"]: r for r in rows if r["kind"] == "separate" and r["case"] == name}
    lines = []
    for r in rows:
        if r["kind"] != "joint" or r["case"] != name or r["seed"] not in separate:
            continue
        target = r["sets"][3]
        sep = separate[r["seed"]]
        reach = next((t["used"] for t in sep["trace"] if t["held_out_s"] <= target), None)
        last = sep["trace"][-1]
        ratio = (f"{reach} ({reach / r['used']:.1f}x)" if reach is not None
                 else f"not within {last['used']} ({last['used'] / r['used']:.1f}x; "
                      f"{last['held_out_s'] / opt:.4f} there)")
        lines.append(f"| {r['seed']} | {r['used']} | {target / opt:.4f} | {ratio} |")
    if lines:
        print("\n| seed | joint measurements | joint K = 4 | separate studies reach it after |")
        print("|---|---:|---:|---|")
        print("\n".join(lines))


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["oracle", "joint", "separate", "tuned", "report"])
    p.add_argument("paths", nargs="*", type=Path)
    p.add_argument("--cases", default="decode,prefill")
    p.add_argument("--ops", default="", help="only these operators (comma separated names: "
                   "qkv_proj,o_proj); default every one")
    p.add_argument("--seeds", default="0")
    p.add_argument("--budgets", default="500,1000")
    p.add_argument("--budget", type=int, default=3200)
    p.add_argument("--verify", type=float, default=VERIFY,
                   help="joint: the share of the budget that checks the sets' claims")
    p.add_argument("--check-reach", type=float, default=CHECK_REACH,
                   help="joint: a config measured within this of a shape in log2 M has "
                   "checked it there")
    p.add_argument("--retile", type=int, choices=[0, 1], default=int(RETILE),
                   help="joint: the incumbents' output tiles re-shaped whole are candidates")
    p.add_argument("--round-reach", type=float, default=0.0,
                   help="joint: --check-reach of the checks in every round")
    p.add_argument("--floor", type=float, default=FLOOR,
                   help="joint: each operator's least share of the budget, of an even split")
    p.add_argument("--ks", default=",".join(str(k) for k in range(1, K_MAX + 1)),
                   help="tuned: the K to tune the baselines' shapes for")
    p.add_argument("--out", type=Path, default=Path("/tmp/kset_bench.jsonl"))
    p.add_argument("--folder", type=Path, default=Path("/tmp/kset_bench"))
    p.add_argument("--oracle-dir", type=Path,
                   default=Path.home() / ".cache" / "aoe_optuna" / "kernel_set_oracle")
    args = p.parse_args(argv)
    args.oracle_dir.mkdir(parents=True, exist_ok=True)
    args.folder.mkdir(parents=True, exist_ok=True)
    ops = [o for o in args.ops.split(",") if o]
    if args.what == "report":
        report(args.paths, args.oracle_dir, ops)
        return 0
    seeds = [int(s) for s in args.seeds.split(",")]
    for name in args.cases.split(","):
        case = Case(name, args.oracle_dir, ops)
        if args.what == "oracle":
            for i in range(len(case.ops)):
                for m in case.oracle_shapes(i) if case.ops[i].varies else []:
                    case.oracle(case.ops[i], m)
                    print(name, case.ops[i].label, m, flush=True)
        for seed in seeds:
            if args.what == "joint":
                run_joint(case, seed, [int(b) for b in args.budgets.split(",")], args.folder,
                          args.out, args.verify, args.floor, args.check_reach,
                          bool(args.retile), args.round_reach)
            elif args.what == "separate":
                run_separate(case, seed, args.budget, args.out)
            elif args.what == "tuned":
                for budget in [int(b) for b in args.budgets.split(",")]:
                    run_tuned_baselines(case, seed, budget, args.folder / "shapes", args.out,
                                        [int(k) for k in args.ks.split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
