"""Certified winners on the cpu backend: do repeated runs agree, and does today's argmin?

    python scripts/bench_certified_cpu.py [--spec studies/cpu_gemm.json] [--runs 5]
        [--first-seed 0] [--n-trials 40] [--out /tmp/certified_cpu]

Runs ``aoe-tune --config SPEC --n-trials N --seed s`` for ``--runs`` seeds, each in
its own SQLite study (the search, then the race of its winners), and reads from
each study its certified winner with its ties and today's pick (the argmin of
single measurements). The runs are different searches, so their winners are
judged together: a referee race re-times the distinct certified winners in
interleaved rounds (the race of :mod:`aoe_optuna.certify.race`, 10 rounds at
most), and another the distinct argmins. A run agrees when its pick is the
referee's winner or ties with it within epsilon; the script also counts the runs
whose pick is the same config as the most common pick.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import optuna

from aoe_optuna.certify.blocks import round_adjusted_means
from aoe_optuna.certify.race import RaceRules
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.create import best_trial
from aoe_optuna.study.race.outcome import certified_of
from aoe_optuna.study.race.record import RaceRecord
from aoe_optuna.study.race.run import run_race
from aoe_optuna.study.run.objective import Evaluator

AOE_TUNE = Path(sys.executable).parent / "aoe-tune"


def run_one(spec: str, n_trials: int, seed: int, out: Path,
            sampler_kwargs: str | None = None) -> dict:
    db = out / f"run{seed}.db"
    if not db.exists():
        t0 = time.time()
        subprocess.run([str(AOE_TUNE), "--config", spec, "--n-trials", str(n_trials),
                        "--seed", str(seed), "--storage", f"sqlite:///{db}", "--no-progress",
                        *(["--sampler-kwargs", sampler_kwargs] if sampler_kwargs else [])],
                       check=True, stdout=subprocess.DEVNULL)
        print(f"run {seed}: {time.time() - t0:.0f} s", flush=True)
    storage = f"sqlite:///{db}"
    name = optuna.get_all_study_names(storage)[0]
    study = optuna.load_study(study_name=name, storage=storage)
    record = RaceRecord.of(study)
    assert record is not None and record.done, f"{db}: no finished race"
    won = certified_of(record)
    assert won is not None
    params = {t.number: dict(t.params) for t in study.get_trials(deepcopy=False)}
    best = best_trial(study)
    return {"seed": seed, "winner": params[won.winner],
            "ties": [params[t] for t in won.ties], "pcs": won.pcs, "spent": won.spent,
            "value": won.value, "interval": list(won.interval),
            "argmin": dict(best.params), "argmin_value": best.value}


def key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def referee(spec_path: str, configs: list[dict]) -> tuple[str, set[str], int, dict[str, dict]]:
    """Race ``configs`` (distinct) on the spec's backend: (winner key, tie set keys, timings,
    per config: its re-timed mean over the winner's, round-adjusted, and its verdict)."""
    spec = load_spec(spec_path)
    evaluator = Evaluator.of_spec(spec)
    distinct = list({key(c): c for c in configs}.values())
    if len(distinct) == 1:
        return key(distinct[0]), {key(distinct[0])}, 0, {key(distinct[0]): {
            "over_winner": 1.0, "verdict": "winner"}}

    def remeasure(config: dict, draw: int) -> tuple[float | None, float | None]:
        ev = evaluator.remeasure(spec.space.full_config(config), draw)
        return (1.0 / ev.tokens_per_s if ev.ok else None), ev.rel_se

    n = len(distinct)
    # a referee times every rival to the end: a parked rival would count as agreeing
    # for want of timings
    rules = RaceRules(epsilon=spec.race.epsilon, confidence=spec.race.confidence,
                      min_rounds=2, max_rounds=10, park=0.0)
    record = RaceRecord(after=0, contenders=list(range(n)), first=dict.fromkeys(range(n), 1.0),
                        budget=10 * n, rules=rules)
    record = run_race(record, dict(enumerate(distinct)), remeasure)
    won = certified_of(record)
    assert won is not None
    timed = [c for c in range(n) if record.costs[c]]
    means = dict(zip(timed, np.exp(round_adjusted_means(
        [np.log(record.costs[c]) for c in timed])), strict=True))
    verdict = {won.winner: "winner", **dict.fromkeys(won.ties, "tied or open"),
               **dict.fromkeys(won.slower, "slower")}
    detail = {key(distinct[c]): {"over_winner": means[c] / means[won.winner],
                                 "verdict": verdict.get(c, "failed"),
                                 "timings": len(record.costs[c])} for c in timed}
    return (key(distinct[won.winner]), {key(distinct[c]) for c in won.tie_set}, record.spent,
            detail)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="studies/cpu_gemm.json")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="the runs' seeds are first-seed, first-seed + 1, ...")
    ap.add_argument("--n-trials", type=int, default=40)
    ap.add_argument("--out", type=Path, default=Path("/tmp/certified_cpu"))
    ap.add_argument("--sampler-kwargs", default=None, metavar="JSON",
                    help="passed to each run's aoe-tune (e.g. a local phase)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [run_one(args.spec, args.n_trials, s, args.out, args.sampler_kwargs)
            for s in range(args.first_seed, args.first_seed + args.runs)]
    for r in rows:
        print(f"run {r['seed']}: certified {r['value']:,.0f} tokens/s "
              f"[{r['interval'][0]:,.0f}, {r['interval'][1]:,.0f}], {len(r['ties'])} ties, "
              f"P >= {r['pcs']}, {r['spent']} re-timings; argmin {r['argmin_value']:,.0f}")
    report = {}
    for what in ("winner", "argmin"):
        picks = [key(r[what]) for r in rows]
        w, ties, spent, detail = referee(args.spec, [r[what] for r in rows])
        agree = sum(p in ties for p in picks)
        same = Counter(picks).most_common(1)[0][1]
        own_ties = sum(any(key(r["winner"]) in {key(t) for t in s["ties"]} | {key(s["winner"])}
                           for s in rows if s is not r) for r in rows) if what == "winner" else None
        report[what] = {"distinct": len(set(picks)), "same_as_most_common": same,
                        "agree_with_referee": agree, "referee_ties": len(ties),
                        "referee_timings": spent, "in_another_runs_tie_set": own_ties,
                        "referee": [detail.get(p) for p in picks]}
        print(f"{what}: {len(set(picks))} distinct of {len(picks)}; the most common one "
              f"{same} times; {agree} of {len(picks)} the referee's winner or tied with it "
              f"within epsilon ({spent} referee timings)"
              + (f"; {own_ties} in another run's tie set" if own_ties is not None else ""))
        for r, p in zip(rows, picks, strict=True):
            d = detail.get(p) or {}
            print(f"  run {r['seed']}: cost {d.get('over_winner', float('nan')):.3f}x the "
                  f"referee's winner's, {d.get('verdict', 'not timed')}")
    (args.out / "report.json").write_text(json.dumps({"runs": rows, "report": report},
                                                     indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
