#!/usr/bin/env python
"""GP-UCB without a prior, its first config given (enqueued) instead of its own design's.

A prior's first proposal is its best config; a prior that knows nothing
(``--prior shuffled`` in ``aoe-tune bench``) thus hands the plain sampler a
random first config. This runs the plain sampler on a recorded space with a
uniformly random feasible config enqueued as trial 0 (drawn with seed
1000 + the run's seed; ``--start design``: none, the sampler's own), the
rest as ``aoe-tune bench`` runs it (the same
in-memory study, seed and ask/tell loop), and prints per seed the best over
the optimum at each budget, then their means, to set beside the bench's
``'gp-ucb:{"_prior": "off"}'`` and ``'gp-ucb:{"_prior": "shuffled"}'`` runs.

    python scripts/bench_given_start.py --space ../shared/spaces/gemm_RTX_3060_laptop.json.gz \\
        --seeds 0-19 --budgets 15,25
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--space", required=True, help="recorded space (.json.gz)")
    ap.add_argument("--seeds", default="0-19", help="LO-HI")
    ap.add_argument("--budgets", default="15,25", help="comma-separated; runs go to the largest")
    ap.add_argument("--start", choices=("random", "design"), default="random",
                    help="design: nothing enqueued, the sampler's own first config (the "
                         "bench's run without a prior)")
    args = ap.parse_args()
    if not Path(args.space).is_file():
        ap.exit(2, f"bench_given_start: --space {args.space}: no such file\n")
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    budgets = [int(b) for b in args.budgets.split(",")]

    import numpy as np
    import optuna

    from aoe_optuna.backends.replay.backend import load_recorded
    from aoe_optuna.bench.exhaustive import replay_exhaustive
    from aoe_optuna.bench.seed_run import Case, Task, build_case, open_session
    from aoe_optuna.study.run.objective import suggest_config

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    case = Case.from_path(args.space)
    built = build_case(case)
    optimum = replay_exhaustive(load_recorded(Path(args.space)), built.space).optimum
    rows = built.space.all_feasible()
    table = []
    for seed in seeds:
        session = open_session(built, Task(case, "gp-ucb", (), seed, max(budgets), 10**6))
        study, space, objective = session.study, session.space, session.objective()
        start = rows[np.random.default_rng(1000 + seed).integers(rows.shape[0])]
        if args.start == "random":
            study.enqueue_trial(space.config(start))
        costs: list[float] = []
        while len(costs) < max(budgets):
            trial = study.ask()
            suggest_config(trial, space)
            try:
                value = objective(trial)
            except Exception:  # noqa: BLE001 - a failed config counts as a measurement
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                costs.append(float("inf"))
                continue
            study.tell(trial, value)
            costs.append(1.0 / value)
        best = [min(costs[:b]) / optimum for b in budgets]
        table.append(best)
        print(seed, " ".join(f"{v:.4f}" for v in best), flush=True)
    means = np.mean(np.array(table), axis=0)
    print("mean", " ".join(f"{v:.4f}" for v in means), "at", args.budgets)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
