"""The certified winner against the argmin of single measurements, on recorded noise.

For each recorded space and seed: one search (the product's run, its measurements
drawn from the configs' recorded repeats, seeded by the seed), then the race of its
winners rerun ``--reruns`` times on that same search, each rerun with fresh draws.
Beside it, today's pick: the argmin of the search's single measurements, and the
same argmin when the measured configs' first timings are drawn afresh. Per seed it
reports the picked config's recorded mean over the best recorded mean the search
measured (and over the space's optimum), how often two reruns agree (the same
winner, or one in the other's tie set; for the argmin, the same config), and the
race's re-timings over the search's measurements.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aoe_optuna.bench.command import BenchError, exhaustive_for
from aoe_optuna.bench.seed_run import Case, _evaluator_for_seed, build_case, init_in_process
from aoe_optuna.bench.subcommand import at_least, parser, run, space_file

NAME = "race"
EXAMPLE = """\
  aoe-tune bench race --space benchmark_hub:gemm_RTX_2080_Ti --seeds 20 --reruns 20 \\
      --budget 100 --out /tmp/race"""


def agreement(picks: Sequence[tuple[int, Sequence[int]]]) -> float:
    """Over ordered pairs of reruns (i, j): the share where j's winner is i's winner or
    in i's tie set. ``picks``: (winner, ties) per rerun."""
    pairs = [(a, b) for a, b in itertools.permutations(picks, 2)]
    if not pairs:
        return 1.0
    return sum(b[0] == a[0] or b[0] in a[1] for a, b in pairs) / len(pairs)


def search(case: Case, seed: int, sampler: str, budget: int) -> dict[str, Any]:
    """The search of ``seed`` on ``case``: each measured config's params, first cost
    (seconds per run, as measured) and recorded mean, and the noise the race is told."""
    import optuna

    from aoe_optuna.study.race.run import measured_noise
    from aoe_optuna.study.run.loop import Budget
    from aoe_optuna.study.run.objective import count_measured
    from aoe_optuna.study.session import IN_MEMORY, SamplerRequest, SpaceSession

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    built = build_case(case)
    evaluator = _evaluator_for_seed(built.evaluator, seed)
    backend, space = evaluator.backend, built.space
    session = SpaceSession.open(IN_MEMORY, f"{case.name}-{seed}", space, evaluator,
                                SamplerRequest(sampler, {}, seed),
                                storage=optuna.storages.InMemoryStorage())
    session.run(Budget(n_measurements=budget), max_idle=50 * budget)
    trials = [t for t in session.study.get_trials(deepcopy=False)
              if t.state == optuna.trial.TrialState.COMPLETE and "repeat_of" not in t.user_attrs]
    rel_noise = max(n for n in (measured_noise(trials),
                                backend.timing_noise({"path": case.path}), 0.0) if n is not None)
    return {
        "searched": count_measured(session.study.get_trials(deepcopy=False)),
        "rel_noise": rel_noise,
        "trials": [{"number": t.number, "params": dict(t.params), "value": float(t.value),  # type: ignore[arg-type]
                    "true_s": backend.recorded_latency_s(space.full_config(t.params))}
                   for t in trials],
    }


def _frozen(stored: dict[str, Any]) -> Any:
    """A stored search's trial as the race reads it (its number, params and value)."""
    from optuna.trial import FrozenTrial, TrialState

    return FrozenTrial(number=stored["number"], state=TrialState.COMPLETE,
                       value=stored["value"], datetime_start=None, datetime_complete=None,
                       params=stored["params"], distributions={}, user_attrs={},
                       system_attrs={}, intermediate_values={}, trial_id=stored["number"])


def races(case: Case, seed: int, found: dict[str, Any], reruns: int,
          settings: Any, argmins: Sequence[int] = ()) -> dict[str, Any]:
    """The race of the search ``found`` (of :func:`search`) rerun ``reruns`` times with
    fresh draws, and the argmin of its measured configs redrawn as often (``argmins``:
    those redraws as an earlier call made them; the draws are seeded, so they are the
    same)."""
    from aoe_optuna.study.race.outcome import certified_of
    from aoe_optuna.study.race.run import new_record, reserve, run_race

    built = build_case(case)
    evaluator, space = _evaluator_for_seed(built.evaluator, seed), built.space
    trials = [_frozen(t) for t in found["trials"]]
    params = {t.number: dict(t.params) for t in trials}
    truth = {t["number"]: t["true_s"] for t in found["trials"]}
    best_true = min(truth.values())
    argmin = max(trials, key=lambda t: (float(t.value), -t.number)).number

    def remeasure(p: Any, draw: int) -> tuple[float | None, float | None]:
        ev = evaluator.remeasure(space.full_config(p), draw)
        return (1.0 / ev.tokens_per_s if ev.ok else None), ev.rel_se

    searched = found["searched"]
    first = new_record(trials, searched, settings, found["rel_noise"], None)
    raced: list[dict[str, Any]] = []
    redone: list[int] = []
    for k in range(reruns):
        if k < len(argmins):
            redone.append(argmins[k])
        else:
            redrawn = {n: remeasure(p, 500_000 + k)[0] or math.inf for n, p in params.items()}
            redone.append(min(redrawn, key=lambda n: (redrawn[n], n)))
        if first is None:  # a budget too small to race: the argmin stands alone
            continue
        fresh = dataclasses.replace(first, draw_base=1 + 1000 * k, costs={}, rel_se={},
                                    failed=[], spent=0, contenders=list(first.contenders),
                                    first=dict(first.first))
        record = run_race(fresh, params, remeasure, reserve=reserve(trials, fresh),
                          max_contenders=settings.contenders)
        c = certified_of(record)
        assert c is not None
        raced.append({"winner": c.winner, "ties": list(c.ties), "spent": c.spent,
                      "pcs": c.pcs, "reason": c.reason, "rounds": c.rounds,
                      "true": truth[c.winner], "contenders": list(record.contenders),
                      "timings": {str(n): len(v) for n, v in record.costs.items()}})
    return {
        "case": case.name, "seed": seed, "searched": searched,
        "contenders": [] if first is None else first.contenders,
        "best_true_s": best_true, "argmin": argmin, "argmin_true_s": truth[argmin],
        "argmin_reruns": redone, "argmin_reruns_true_s": [truth[a] for a in redone],
        "races": raced,
    }


def one_seed(case: Case, seed: int, sampler: str, budget: int, reruns: int,
             settings: Any) -> dict[str, Any]:
    """The search of ``seed`` on ``case``, its race rerun ``reruns`` times, and the argmin
    redrawn as often; the search is kept in the row, so the races can be rerun on it."""
    found = search(case, seed, sampler, budget)
    return {**races(case, seed, found, reruns, settings), "sampler": sampler,
            "search": found}


def _stat(f: Any, xs: Sequence[float]) -> float:
    """``f`` of ``xs``, NaN for none (no seed was raced: a budget too small)."""
    return float(f(np.asarray(xs, dtype=float))) if len(xs) else math.nan


def summarise(rows: Sequence[dict[str, Any]], optimum: float) -> dict[str, float]:
    """Per space: the means over seeds (and the worst seed) of what one_seed measured."""
    race_gap = [r["true"] / row["best_true_s"] - 1 for row in rows for r in row["races"]]
    arg_gap = [t / row["best_true_s"] - 1 for row in rows for t in row["argmin_reruns_true_s"]]
    race_agree = [agreement([(r["winner"], r["ties"]) for r in row["races"]])
                  for row in rows if row["races"]]
    arg_agree = [agreement([(a, ()) for a in row["argmin_reruns"]]) for row in rows]
    spent = [r["spent"] / row["searched"] for row in rows for r in row["races"]]
    ties = [len(r["ties"]) for row in rows for r in row["races"]]
    mean, worst = np.mean, np.max
    return {
        "seeds": len(rows),
        "race_gap_mean": _stat(mean, race_gap), "race_gap_max": _stat(worst, race_gap),
        "race_within_half_pct": _stat(mean, [g <= 0.005 for g in race_gap]),
        "argmin_gap_mean": _stat(mean, arg_gap), "argmin_gap_max": _stat(worst, arg_gap),
        "argmin_within_half_pct": _stat(mean, [g <= 0.005 for g in arg_gap]),
        "race_agree_mean": _stat(mean, race_agree), "race_agree_min": _stat(np.min, race_agree),
        "argmin_agree_mean": _stat(mean, arg_agree), "argmin_agree_min": _stat(np.min, arg_agree),
        "spent_mean": _stat(mean, spent), "spent_max": _stat(worst, spent),
        "ties_mean": _stat(mean, ties),
        "race_vs_opt": _stat(mean, [r["true"] / optimum for row in rows for r in row["races"]]),
        "argmin_vs_opt": _stat(mean, [row["argmin_true_s"] / optimum for row in rows]),
    }


def table(summaries: dict[str, dict[str, float]]) -> str:
    lines = ["| space | seeds | certified: over best measured, mean / worst | within 0.5% | "
             "argmin: mean / worst | within 0.5% | reruns agree, race mean / worst | "
             "argmin mean / worst | race re-timings / search, mean / max | ties | "
             "certified / argmin over optimum |", "|---" * 11 + "|"]
    for name, s in summaries.items():
        lines.append(
            f"| {name} | {s['seeds']} | {s['race_gap_mean']:+.3%} / {s['race_gap_max']:+.3%} "
            f"| {s['race_within_half_pct']:.1%} | {s['argmin_gap_mean']:+.3%} / "
            f"{s['argmin_gap_max']:+.3%} | {s['argmin_within_half_pct']:.1%} | "
            f"{s['race_agree_mean']:.1%} / {s['race_agree_min']:.1%} | "
            f"{s['argmin_agree_mean']:.1%} / {s['argmin_agree_min']:.1%} | "
            f"{s['spent_mean']:.1%} / {s['spent_max']:.1%} | {s['ties_mean']:.1f} | "
            f"{s['race_vs_opt']:.4f} / {s['argmin_vs_opt']:.4f} |")
    return "\n".join(lines)


def recorded_file(text: str) -> str:
    """An argparse type: a recorded space's file, ``benchmark_hub:NAME`` fetched once."""
    from aoe_optuna.backends.replay.hub import HubError, is_hub, recorded_space

    if is_hub(text):
        try:
            return str(recorded_space(text))
        except HubError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return space_file(text)


def park_level(text: str) -> float:
    """An argparse type: a chance from 0 to 0.49 (the race's ``park``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 0.49:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 0.49, got {text!r}")
    return value


def build_parser() -> Any:
    ap = parser(NAME, __doc__, EXAMPLE)
    ap.add_argument("--space", action="append", required=True, type=recorded_file,
                    help="a recorded space with repeats, a file or benchmark_hub:NAME "
                    "(repeatable)")
    ap.add_argument("--sampler", default="gp-ucb", help="the search's sampler")
    ap.add_argument("--budget", type=at_least(2), default=100,
                    help="the search's measurements")
    ap.add_argument("--seeds", type=at_least(1), default=20)
    ap.add_argument("--first-seed", type=at_least(0), default=0)
    ap.add_argument("--reruns", type=at_least(2), default=20,
                    help="races rerun on each search")
    ap.add_argument("--epsilon", type=float, default=None, help="the tie margin (0.01)")
    ap.add_argument("--race-budget", type=float, default=None,
                    help="re-timings as a share of the search's measurements (0.2)")
    ap.add_argument("--allocation", choices=("pairs", "rounds"), default=None,
                    help="after two rounds of all, time the leader and its most "
                    "ambiguous rival each round (pairs, the default), or every open "
                    "rival (rounds)")
    ap.add_argument("--park", type=park_level, default=None,
                    help="with --allocation rounds: stop timing a rival less likely than "
                    "this to be faster than the leader (0.2; 0: time every open rival "
                    "to the end)")
    ap.add_argument("--out", type=Path, required=True,
                    help="folder of race.jsonl (one line per space and seed; an "
                    "interrupted run resumes) and report.md")
    ap.add_argument("--rerace", action="store_true",
                    help="rerun the races of the searches stored in --out's race.jsonl "
                    "(the searches are not run again)")
    return ap


def _race(argv: list[str]) -> int:
    from aoe_optuna.spec.race import RaceSettings

    args = build_parser().parse_args(argv)
    kw = {k: v for k, v in (("epsilon", args.epsilon), ("budget", args.race_budget),
                            ("park", args.park), ("allocation", args.allocation))
          if v is not None}
    settings = RaceSettings(**kw)
    cases = [Case.from_path(p, noise="recorded") for p in args.space]
    if any(c.kind == "spec" for c in cases):
        raise BenchError("--space: expected recorded spaces (Kernel Tuner cache files)")
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "race.jsonl"
    done = [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []
    if args.rerace:
        done = _rerace(done, cases, args.reruns, settings, log)
    have = {(d["case"], d["seed"]) for d in done}
    init_in_process()
    for case in cases:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            if (case.name, seed) in have:
                continue
            row = one_seed(case, seed, args.sampler, args.budget, args.reruns, settings)
            done.append(row)
            with log.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            _say(row)
    summaries = {}
    for case in cases:
        rows = [d for d in done if d["case"] == case.name]
        summaries[case.name] = summarise(rows, exhaustive_for(case, None).optimum)
    report = table(summaries)
    (args.out / "report.md").write_text(report + "\n")
    (args.out / "summary.json").write_text(json.dumps(summaries, indent=1) + "\n")
    print(report)
    return 0


def _say(row: dict[str, Any]) -> None:
    raced = row["races"]
    print(f"  {row['case']} seed {row['seed']}: {len(row['contenders'])} contenders, "
          f"winners {sorted({r['winner'] for r in raced})}, argmin {row['argmin']}, "
          f"{np.mean([r['spent'] for r in raced]) if raced else 0:.1f} re-timings",
          flush=True)


def _rerace(done: list[dict[str, Any]], cases: Sequence[Case], reruns: int, settings: Any,
            log: Path) -> list[dict[str, Any]]:
    """The rows of ``done`` of ``cases`` that hold their search, raced again; the rows
    without one are dropped (their seeds run in full). ``log`` rewritten as it goes."""
    from aoe_optuna.atomic_write import write_atomic

    by_name = {c.name: c for c in cases}
    init_in_process()
    out = []
    for row in done:
        case = by_name.get(row["case"])
        if case is not None and "search" in row:
            row = {**row, **races(case, row["seed"], row["search"], reruns, settings,
                                  row.get("argmin_reruns", ()))}
            _say(row)
        if case is None or "search" in row:
            out.append(row)
    write_atomic(log, "".join(json.dumps(r) + "\n" for r in out))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``aoe-tune bench race``."""
    return run(NAME, _race, argv)
